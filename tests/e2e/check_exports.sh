#!/usr/bin/env bash
# Intent: libpinguard.so never depends on libcudart or libcuda (no DT_NEEDED); its CUDA exports
# are exactly the names of the table of entry points (shim/pg_entries.inc, printed by
# pg_entry_list: every row and its _ptsz twin), and besides them only dlsym, the interposed libc
# I/O and signal calls, and the pinguard_* API; each I/O call the shim must interpose is exported.
#
# TEST: exports BARE ARGS $<TARGET_FILE:pinguard> $<TARGET_FILE:pg_entry_list>
set -u
lib=$1
list=$2
fail=0
cuda_exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' |
               grep -E '^(cuda|cu[A-Z]|__cuda)' | sort)
table=$("$list" | awk '{print $2}' | sort)
if [ -z "$table" ] || [ "$cuda_exports" != "$table" ]; then
  echo "FAIL: the CUDA exports differ from the table of entry points (< exported, > table):"
  diff <(echo "$cuda_exports") <(echo "$table"); fail=1
fi
if readelf -d "$lib" | grep -i 'NEEDED' | grep -Eq 'libcudart|libcuda\.so'; then
  echo "FAIL: $lib has a DT_NEEDED on libcudart or libcuda"; readelf -d "$lib" | grep NEEDED; fail=1
fi
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' |
      grep -Ev '^(cuda[A-Za-z0-9_]+|cu[A-Z][A-Za-z0-9_]+|dlsym|pinguard_[a-z_]+|_init|_fini)$' |
      grep -Evx 'sigaction|signal|__cudaGetKernel|__cudaLaunchKernel(_ptsz)?' |
      grep -Evx 'p?write(64)?|p?writev(64)?|pwritev(64v)?2|send(to|msg|mmsg)?|mq_(timed)?send|msgsnd' |
      grep -Evx 'p?read(64)?|p?readv(64)?|preadv(64v)?2|recv(from|msg|mmsg)?|mq_(timed)?receive|msgrcv' |
      grep -Evx '__(write|read|send|pwrite64|pread64)|__(p?read(64)?|recv(from)?)_chk' |
      grep -Evx 'f(read|write)(_unlocked)?|__fread(_unlocked)?_chk|aio_(read|write)(64)?' |
      grep -Evx 'lio_listio(64)?|io_submit|process_vm_(readv|writev)|vmsplice|getrandom|getentropy|msync' ||
      true)
if [ -n "$bad" ]; then
  echo "FAIL: unexpected exports:"; echo "$bad"; fail=1
fi
n=$(nm -D --defined-only "$lib" | grep -c ' cuda')
[ "$n" -ge 40 ] || { echo "FAIL: only $n cuda* exports"; fail=1; }
for sym in cudaMemcpyAsync cudaMemcpyAsync_ptsz cudaLaunchKernel cudaMemcpyBatchAsync \
           cudaFreeHost pinguard_release pinguard_commit pinguard_wait \
           write writev pwritev2 pwritev64v2 sendmsg sendmmsg fwrite fwrite_unlocked \
           read readv preadv preadv64 preadv2 preadv64v2 recvmsg recvmmsg fread fread_unlocked \
           __fread_chk __fread_unlocked_chk vmsplice process_vm_readv process_vm_writev \
           aio_read aio_read64 aio_write aio_write64 lio_listio lio_listio64 mq_send \
           mq_timedsend mq_receive mq_timedreceive msgsnd msgrcv getrandom getentropy io_submit msync; do
  nm -D --defined-only "$lib" | grep -q " $sym\$" || { echo "FAIL: $sym not exported"; fail=1; }
done
[ $fail -eq 0 ] && echo "ok: $n cuda* exports, pinguard_* API, no libcudart dependency"
exit $fail
