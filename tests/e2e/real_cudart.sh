#!/usr/bin/env bash
# Runs the real_cudart program on the toolkit's runtime with and without the shim and requires
# identical output and status.
#   real_cudart.sh PROGRAM LIBDIR [static]
# LIBDIR goes on LD_LIBRARY_PATH (where the shared runtime, or a driver, is found). With `static`
# the program carries the toolkit's libcudart_static.a: pinguard then says so in one warning on
# stderr, which is the only difference allowed.
#
# The program linked against the toolkit's own libcudart, without an rpath: LD_LIBRARY_PATH
# decides.
# TEST: real_cudart_no_gpu ARGS $<TARGET_FILE:e2e_real_cudart> ${CUDAToolkit_LIBRARY_DIR}
# The same program built with nvcc's defaults, which link the toolkit's libcudart_static.a
# (PG_E2E_REAL_STATIC): its runtime reaches the driver only through dlopen, dlsym and
# cuGetProcAddress, which pinguard overrides. With no driver at all, and with simcuda's driver
# (which the real runtime refuses), the error codes and the status must be those of a run
# without pinguard. A sanitized simcuda driver loads only where the sanitizer's runtime is
# preloaded, which the run without pinguard has not: that variant needs an unsanitized build.
# TEST: real_static_cudart.no_driver ARGS ${PG_E2E_REAL_STATIC} /nonexistent static
#   IF PG_E2E_NVCC
# TEST: real_static_cudart.simcuda_driver ARGS ${PG_E2E_REAL_STATIC} ${SIMCUDA_LIB_DIR} static
#   IF PG_E2E_NVCC AND NOT PG_SANITIZE
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
