#!/usr/bin/env bash
# Intent: where mprotect fails on a kind of pinned memory, guard pages turn themselves off for it
# with exactly one warning, and nothing else changes: the CPU read of an in-flight buffer is
# then not caught, and the program completes normally.
#   guard_probe_fails.sh MPROTECT_REFUSES_SO GUARD_CPU_ACCESS_PROGRAM
#
# TEST: guard_probe_fails ARGS $<TARGET_FILE:e2e_mprotect_refuses> $<TARGET_FILE:e2e_guard_cpu_access>
set -u
out=$(LD_PRELOAD="$PG_PRELOAD:$1" PINGUARD_OPTIONS=mode=audit:guard=1:guard_min_bytes=4096 \
      "$2" bug read 2>&1)
status=$?
echo "$out"
warnings=$(grep -c 'WARNING: mprotect fails on cudaHostAlloc memory' <<<"$out")
[ "$status" -eq 0 ] || { echo "FAIL: exit status $status"; exit 1; }
[ "$warnings" -eq 1 ] || { echo "FAIL: $warnings warnings, expected 1"; exit 1; }
if grep -q 'ERROR:' <<<"$out"; then echo "FAIL: a report without guard pages"; exit 1; fi
echo "ok: guard pages off for that kind, one warning, program unaffected"
