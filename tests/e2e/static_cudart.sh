#!/usr/bin/env bash
# Intent: a statically linked CUDA runtime gets exactly one warning naming the object that carries
# it (issue 9, defect 6), at the default verbosity (further objects are counted in one line), whether it is the program itself or a shared
# object dlopen()ed later; the program's output and exit status are unchanged. mode=off and a
# program on the shared runtime (simcuda) get no such warning.
#   static_cudart.sh STATIC_PROGRAM LOADER EXTENSION SHARED_RUNTIME_PROGRAM
set -u
static=$1 loader=$2 ext=$3 dynamic=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; echo "--- stdout:"; cat "$tmp/out"; echo "--- stderr:"; cat "$tmp/err"; fails=$((fails + 1)); }
run() { # options command...
  local opts=$1; shift
  env LD_PRELOAD="${PG_PRELOAD:?}" PINGUARD_OPTIONS="$opts" "$@" >"$tmp/out" 2>"$tmp/err"
}
warned() { grep -c "statically linked CUDA runtime" "$tmp/err"; }

run "" "$static"
status=$?
[ "$status" -eq 0 ] || fail "static program: exit status $status"
grep -q "cudaGetDeviceCount returned" "$tmp/out" || fail "static program: its output is missing"
[ "$(warned)" -eq 1 ] || fail "static program: $(warned) warnings, expected 1"
grep -qF "pinguard: WARNING: $(readlink -f "$static") contains a statically linked CUDA runtime" \
  "$tmp/err" || fail "static program: the warning does not name the program"

run "" "$loader" "$ext"
status=$?
[ "$status" -eq 0 ] || fail "dlopen: exit status $status"
grep -q "cudaGetDeviceCount returned" "$tmp/out" || fail "dlopen: the extension did not run"
[ "$(warned)" -eq 1 ] || fail "dlopen: $(warned) warnings, expected 1"
grep -qF "pinguard: WARNING: $ext contains a statically linked CUDA runtime" "$tmp/err" ||
  fail "dlopen: the warning does not name the extension"

# Two such objects (the extension preloaded into the static program): the first is named, the
# second counted in one line; verbosity=1 names both.
two() { env LD_PRELOAD="${PG_PRELOAD:?}:$ext" PINGUARD_OPTIONS="$1" "$static" >"$tmp/out" 2>"$tmp/err"; }
two ""
[ "$(grep -c "contains a statically linked CUDA runtime" "$tmp/err")" -eq 1 ] ||
  fail "two objects: expected one named"
grep -q "1 more loaded object carries a statically linked CUDA runtime" "$tmp/err" ||
  fail "two objects: the second is not counted"
two "verbosity=1"
[ "$(grep -c "contains a statically linked CUDA runtime" "$tmp/err")" -eq 2 ] ||
  fail "two objects, verbosity=1: expected both named"

run "mode=off" "$static"
[ "$(warned)" -eq 0 ] || fail "mode=off: warned"

run "mode=audit" "$dynamic" fixed
[ "$(warned)" -eq 0 ] || fail "shared runtime: warned"
[ "$fails" -eq 0 ] && echo "ok: static runtimes are named once, shared ones never"
exit "$fails"
