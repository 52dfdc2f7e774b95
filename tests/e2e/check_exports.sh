#!/usr/bin/env bash
# Intent: libpinguard.so never depends on libcudart (no DT_NEEDED), and exports only the
# interposed cuda* names, the interposed libc I/O and signal calls, and the pinguard_* API.
set -u
lib=$1
fail=0
if readelf -d "$lib" | grep -i 'NEEDED' | grep -q 'libcudart'; then
  echo "FAIL: $lib has a DT_NEEDED on libcudart"; readelf -d "$lib" | grep NEEDED; fail=1
fi
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' |
      grep -Ev '^(cuda[A-Za-z0-9_]+|pinguard_[a-z_]+|_init|_fini)$' |
      grep -Evx 'sigaction|signal|(p?write(v)?(64)?)|pwritev64|send(to|msg)?|(p?read(v)?(64)?)|recv(from|msg)?|__(p?read(64)?|recv(from)?)_chk|__(write|read|send|pwrite64|pread64)|__cudaGetKernel|__cudaLaunchKernel(_ptsz)?' || true)
if [ -n "$bad" ]; then
  echo "FAIL: unexpected exports:"; echo "$bad"; fail=1
fi
n=$(nm -D --defined-only "$lib" | grep -c ' cuda')
[ "$n" -ge 40 ] || { echo "FAIL: only $n cuda* exports"; fail=1; }
for sym in cudaMemcpyAsync cudaMemcpyAsync_ptsz cudaLaunchKernel cudaMemcpyBatchAsync \
           cudaFreeHost pinguard_release pinguard_commit pinguard_wait; do
  nm -D --defined-only "$lib" | grep -q " $sym\$" || { echo "FAIL: $sym not exported"; fail=1; }
done
[ $fail -eq 0 ] && echo "ok: $n cuda* exports, pinguard_* API, no libcudart dependency"
exit $fail
