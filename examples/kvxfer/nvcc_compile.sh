#!/bin/sh
# nvcc_compile.sh: compiles the engine's kernel source as real CUDA for sm_90, compile only.
#   nvcc_compile.sh NVCC SOURCE OUTDIR     (exit 77 = skipped: no nvcc)
nvcc=$1 src=$2 outdir=$3
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "nvcc_compile: nvcc not found, skipping"
  exit 77
fi
mkdir -p "$outdir" || exit 1
set -x
"$nvcc" -arch=sm_90 -Werror all-warnings -c "$src" -o "$outdir/kv_kernels.o"
