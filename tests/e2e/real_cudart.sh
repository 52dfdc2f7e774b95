#!/usr/bin/env bash
# Runs the real_cudart program on the toolkit's runtime with and without the shim and requires
# identical output and status.
#   real_cudart.sh PROGRAM LIBDIR [static]
# LIBDIR goes on LD_LIBRARY_PATH (where the shared runtime, or a driver, is found). With `static`
# the program carries the toolkit's libcudart_static.a: pinguard then says so in one warning on
# stderr, which is the only difference allowed.
set -u
prog=$1 libdir=$2 static=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LD_LIBRARY_PATH="$libdir" "$prog" >"$tmp/a.out" 2>"$tmp/a.err"; sa=$?
LD_LIBRARY_PATH="$libdir" LD_PRELOAD="$PG_PRELOAD" PINGUARD_OPTIONS=mode=enforce "$prog" \
  >"$tmp/b.out" 2>"$tmp/b.err"; sb=$?
cat "$tmp/a.out" "$tmp/a.err"
fail() { echo "FAIL: $* (status $sa without, $sb with the shim); with the shim:"; cat "$tmp/b.out" "$tmp/b.err"; exit 1; }
[ "$sa" -eq 0 ] || fail "the program failed without pinguard"
[ "$sb" -eq "$sa" ] || fail "different exit status"
cmp -s "$tmp/a.out" "$tmp/b.out" || fail "different results"
if [ -n "$static" ]; then
  grep -v "contains a statically linked CUDA runtime" "$tmp/b.err" >"$tmp/b.rest"
  [ "$(grep -c "contains a statically linked CUDA runtime" "$tmp/b.err")" -eq 1 ] ||
    fail "expected one static-runtime warning"
  cmp -s "$tmp/a.err" "$tmp/b.rest" || fail "stderr differs beyond the warning"
else
  cmp -s "$tmp/a.err" "$tmp/b.err" || fail "different stderr"
fi
[ "$(grep -c -- '->' "$tmp/a.out")" -ge 10 ] || fail "the program printed too few results"
echo "ok: identical results with and without pinguard"
