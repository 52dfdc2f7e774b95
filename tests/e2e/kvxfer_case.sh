#!/usr/bin/env bash
# Runs the transfer engine under the preloaded shim, N times, and checks every run:
#   kvxfer_case.sh --runs N --mode audit|enforce --expect KIND|none [--names FUNC]
#                  [--corrupt any|0] [--exit N] -- KVXFER args...
# --expect KIND: each run reports KIND and nothing else; none: no report at all. KIND,OTHER...:
#   KIND is required, the other kinds are allowed too (what the same bug goes on to cause).
# --names FUNC: a report's SUMMARY line names FUNC (the serializer, the pin copy).
# --corrupt 0: every run ends with "0 of M blocks corrupted" (enforce must prevent the bug).
# --exit N: every run's exit status. Default: 23 (pinguard's exitcode) for audit with a report;
#   0 otherwise: enforce prevented the violation, so the engine's own status (0) stands.
#
# The transfer engine's cases (registered where the engine is built). With the allocator's
# pinguard_release annotation: enforce prevents the early release, audit names it. The fixed
# engine gives no report anywhere in the matrix.
# KVXFER: release_annotation.${xfer}.enforce RUNS 3 MODE enforce
#   EXPECT release-during-device-access CORRUPT 0
#   ARGS --bug=retrieve-early-release --xfer=${xfer} FOR xfer IN kernel memcpy batch
# KVXFER: release_annotation.${xfer}.audit RUNS 1 MODE audit EXPECT release-during-device-access
#   ARGS --bug=retrieve-early-release --xfer=${xfer} FOR xfer IN kernel memcpy batch
# KVXFER: fixed.${transport}.${xfer} RUNS 1 MODE audit EXPECT none
#   ARGS --transport=${transport} --xfer=${xfer}
#   FOR xfer IN kernel memcpy batch FOR transport IN serialize shm
# KVXFER: fixed_guard.${transport}.${xfer} RUNS 1 MODE audit EXPECT none GUARD
#   ARGS --transport=${transport} --xfer=${xfer}
#   FOR xfer IN kernel memcpy batch FOR transport IN serialize shm
# No annotation, no engine change: guard pages catch both incident bugs, 10 runs out of 10. The
# sanitizer builds check the kernel mode only (PG_E2E_KVXFER_GUARD_XFERS): under
# ThreadSanitizer, enqueueing a thousand small guarded copies takes longer than any device
# latency that keeps the suite's time reasonable, so the race never happens in the memcpy and
# batch modes there; under ASAN and UBSAN those cells cost 9 s each and run the same shim paths
# as the cases above. The normal build runs every cell.
# KVXFER: guard_store.${xfer}.audit RUNS 10 MODE audit GUARD
#   EXPECT cpu-read-during-device-write NAMES kv_commit_serialize
#   ARGS --bug=store-no-sync --transport=serialize --xfer=${xfer}
#   FOR xfer IN ${PG_E2E_KVXFER_GUARD_XFERS}
# KVXFER: guard_store.${xfer}.enforce RUNS 10 MODE enforce GUARD
#   EXPECT cpu-read-during-device-write CORRUPT 0
#   ARGS --bug=store-no-sync --transport=serialize --xfer=${xfer}
#   FOR xfer IN ${PG_E2E_KVXFER_GUARD_XFERS}
# KVXFER: guard_retrieve.${transport}.${xfer}.audit RUNS 10 MODE audit GUARD
#   EXPECT cpu-write-during-device-access NAMES kv_pin_chunk
#   ARGS --bug=retrieve-early-release --no-release-annotation
#   --transport=${transport} --xfer=${xfer}
#   FOR xfer IN ${PG_E2E_KVXFER_GUARD_XFERS} FOR transport IN serialize shm
# KVXFER: guard_retrieve.${transport}.${xfer}.enforce RUNS 10 MODE enforce GUARD
#   EXPECT cpu-write-during-device-access CORRUPT 0
#   ARGS --bug=retrieve-early-release --no-release-annotation
#   --transport=${transport} --xfer=${xfer}
#   FOR xfer IN ${PG_E2E_KVXFER_GUARD_XFERS} FOR transport IN serialize shm
# Two engines on two devices, one thread each, sharing the pinned allocator (kvxfer
# --devices 2): the fixed engine is silent, guard pages catch both bugs on both devices, and
# enforce leaves nothing corrupted (a block one device's scatter still reads may be the other
# device's next pin: the conflict is between devices).
# KVXFER: devices2.fixed_guard RUNS 1 MODE audit EXPECT none GUARD
#   ARGS --devices=2 --xfer=kernel ENV SIMCUDA_DEVICES=2
# KVXFER: devices2.guard_store.audit RUNS 2 MODE audit GUARD
#   EXPECT cpu-read-during-device-write NAMES kv_commit_serialize
#   ARGS --devices=2 --bug=store-no-sync --xfer=kernel ENV SIMCUDA_DEVICES=2
# KVXFER: devices2.guard_store.enforce RUNS 2 MODE enforce GUARD
#   EXPECT cpu-read-during-device-write CORRUPT 0
#   ARGS --devices=2 --bug=store-no-sync --xfer=kernel ENV SIMCUDA_DEVICES=2
# The early release goes on to a race between devices: the other device's next kernel on the
# block is ordered after nothing the first one did (device-access-conflict, allowed).
# KVXFER: devices2.guard_retrieve.enforce RUNS 2 MODE enforce GUARD
#   EXPECT cpu-write-during-device-access,device-access-conflict CORRUPT 0
#   ARGS --devices=2 --bug=retrieve-early-release --no-release-annotation --xfer=kernel
#   ENV SIMCUDA_DEVICES=2
# KVXFER: devices2.release_annotation.enforce RUNS 2 MODE enforce
#   EXPECT release-during-device-access,device-access-conflict CORRUPT 0
#   ARGS --devices=2 --bug=retrieve-early-release ENV SIMCUDA_DEVICES=2
set -u
runs=1 mode=audit expect=none names="" corrupt=any want_exit=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --names) names=$2; shift 2 ;;
    --corrupt) corrupt=$2; shift 2 ;;
    --exit) want_exit=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "kvxfer_case.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$want_exit" ]; then
  if [ "$mode" = audit ] && [ "$expect" != none ]; then want_exit=23; else want_exit=0; fi
fi
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
for i in $(seq "$runs"); do
  env LD_PRELOAD="${PG_PRELOAD:?}" PINGUARD_OPTIONS="mode=$mode${PG_EXTRA_OPTIONS:+:$PG_EXTRA_OPTIONS}" \
      "$@" >"$out" 2>"$err"
  status=$?
  fail() { echo "FAIL (run $i of $runs): $*"; echo "--- stdout:"; cat "$out"; echo "--- stderr:"; head -n 60 "$err"; exit 1; }
  reports=$(grep -c "pinguard: ERROR: " "$err")
  result=$(grep -E '^[0-9]+ of [0-9]+ blocks corrupted$' "$out")
  [ -n "$result" ] || fail "no verification line (status $status)"
  if [ "$expect" = none ]; then
    [ "$reports" -eq 0 ] || fail "expected no report, got $reports"
  else
    first=${expect%%,*}
    matching=$(grep -c "pinguard: ERROR: $first " "$err")
    [ "$matching" -ge 1 ] || fail "expected a $first report"
    allowed=$(grep -cE "pinguard: ERROR: (${expect//,/|}) " "$err")
    [ "$allowed" -eq "$reports" ] || fail "reports of other kinds than $expect"
  fi
  if [ -n "$names" ]; then
    grep -q "^SUMMARY: pinguard: ${expect%%,*} .* in $names\$" "$err" || fail "no SUMMARY naming $names"
  fi
  [ "$status" -eq "$want_exit" ] || fail "exit status $status, expected $want_exit"
  if [ "$corrupt" = 0 ]; then
    case "$result" in 0\ of*) ;; *) fail "enforce left corruption: $result" ;; esac
  fi
done
echo "ok: $runs runs, mode=$mode expect=$expect names=${names:-any} corrupt=$corrupt exit=$want_exit; last: $result"
