#!/usr/bin/env bash
# Intent: a statically linked CUDA runtime gets exactly one warning naming the object that carries
# it, at the default verbosity in one complete line (several objects: their count and the first
# one's name), whether it is the program itself or a shared
# object dlopen()ed later; the program's output and exit status are unchanged. mode=off and a
# program on the shared runtime (simcuda) get no such warning.
#   static_cudart.sh STATIC_PROGRAM LOADER EXTENSION SHARED_RUNTIME_PROGRAM
#
# TEST: static_cudart ARGS $<TARGET_FILE:e2e_static_cudart> $<TARGET_FILE:e2e_dlopen_ext>
#   $<TARGET_FILE:e2e_static_cudart_ext> $<TARGET_FILE:e2e_free_during_copy>
#   IF TARGET CUDA::cudart_static
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
# One complete line: what is seen, what is not, and where to read more.
grep "statically linked CUDA runtime" "$tmp/err" |
  grep -q "driver API (pinning, .* stream callbacks are not seen (verbosity=1 says more)\$" ||
  fail "static program: the warning is not one complete line"

run "" "$loader" "$ext"
status=$?
[ "$status" -eq 0 ] || fail "dlopen: exit status $status"
grep -q "cudaGetDeviceCount returned" "$tmp/out" || fail "dlopen: the extension did not run"
[ "$(warned)" -eq 1 ] || fail "dlopen: $(warned) warnings, expected 1"
grep -qF "pinguard: WARNING: $ext contains a statically linked CUDA runtime" "$tmp/err" ||
  fail "dlopen: the warning does not name the extension"

# Two such objects (the extension preloaded into the static program): one complete line at the
# default verbosity, with the count and the first one's name; verbosity=1 names both.
two() { env LD_PRELOAD="${PG_PRELOAD:?}:$ext" PINGUARD_OPTIONS="$1" "$static" >"$tmp/out" 2>"$tmp/err"; }
two ""
[ "$(warned)" -eq 1 ] || fail "two objects: $(warned) warning lines, expected 1"
grep -qF "pinguard: WARNING: 2 loaded objects contain a statically linked CUDA runtime, the first $(readlink -f "$static"): pinguard sees" \
  "$tmp/err" || fail "two objects: the line does not give the count and the first name"
grep "statically linked CUDA runtime" "$tmp/err" |
  grep -q "stream callbacks are not seen (verbosity=1 lists them)\$" ||
  fail "two objects: the line is not complete"
two "verbosity=1"
[ "$(grep -c "contains a statically linked CUDA runtime (libcudart_static.a" "$tmp/err")" -eq 2 ] ||
  fail "two objects, verbosity=1: expected both named"
grep -qF "$ext contains a statically linked CUDA runtime" "$tmp/err" ||
  fail "two objects, verbosity=1: the extension is not named"

run "mode=off" "$static"
[ "$(warned)" -eq 0 ] || fail "mode=off: warned"

run "mode=audit" "$dynamic" fixed
[ "$(warned)" -eq 0 ] || fail "shared runtime: warned"
[ "$fails" -eq 0 ] && echo "ok: static runtimes are named once, shared ones never"
exit "$fails"
