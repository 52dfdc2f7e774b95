#!/usr/bin/env bash
# Runs the real_cudart program on the toolkit's libcudart with and without the shim and
# requires identical output and status.
set -u
prog=$1 libdir=$2
a=$(LD_LIBRARY_PATH="$libdir" "$prog" 2>&1); sa=$?
b=$(LD_LIBRARY_PATH="$libdir" LD_PRELOAD="$PG_PRELOAD" PINGUARD_OPTIONS=mode=enforce "$prog" 2>&1); sb=$?
echo "$a"
if [ "$sa" -ne 0 ] || [ "$sb" -ne "$sa" ] || [ "$a" != "$b" ]; then
  echo "FAIL: with the shim (status $sb):"; echo "$b"; exit 1
fi
echo "ok: identical results with and without pinguard"
