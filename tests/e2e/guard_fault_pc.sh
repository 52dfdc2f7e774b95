#!/usr/bin/env bash
# Intent: a guard fault on a function's first instruction is reported in that function (issue 9,
# defect 5): the CPU access's frame #0 and the SUMMARY line name fault_first_byte_load and never
# fault_neighbour_before, the function whose last byte precedes it; a suppression by the
# faulting function's name suppresses the report, one by the neighbour's name does not.
#   guard_fault_pc.sh PROGRAM      ($PG_PRELOAD names the shim, as for run_case.sh)
#
# TEST: guard_fault_pc ARGS $<TARGET_FILE:e2e_guard_fault_pc>
set -u
prog=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; echo "--- stderr:"; cat "$tmp/err"; fails=$((fails + 1)); }
run() { # options...
  env LD_PRELOAD="${PG_PRELOAD:?}" PINGUARD_OPTIONS="guard=1:guard_min_bytes=4096:$1" \
      SIMCUDA_LATENCY_US="${SIMCUDA_LATENCY_US:-200000}" "$prog" bug >"$tmp/out" 2>"$tmp/err"
}

run "mode=audit"
status=$?
[ "$status" -eq 23 ] || fail "audit: exit status $status, expected 23"
grep -q "pinguard: ERROR: cpu-read-during-device-write" "$tmp/err" || fail "audit: no report"
grep -Eq '^    #0 0x[0-9a-f]+ in fault_first_byte_load ' "$tmp/err" ||
  fail "audit: frame #0 of the CPU access does not name fault_first_byte_load"
grep -Eq '^SUMMARY: pinguard: cpu-read-during-device-write .* in fault_first_byte_load$' \
  "$tmp/err" || fail "audit: the SUMMARY line does not name fault_first_byte_load"
! grep -q "fault_neighbour_before" "$tmp/err" || fail "audit: the neighbour is named"

printf 'cpu-read-during-device-write:^fault_neighbour_before$\n' >"$tmp/wrong.supp"
run "mode=audit:suppressions=$tmp/wrong.supp"
status=$?
[ "$status" -eq 23 ] && grep -q "pinguard: ERROR: cpu-read-during-device-write" "$tmp/err" ||
  fail "a rule naming the neighbour suppressed the report (status $status)"

printf 'cpu-read-during-device-write:^fault_first_byte_load$\n' >"$tmp/right.supp"
for mode in audit enforce; do
  run "mode=$mode:suppressions=$tmp/right.supp"
  status=$?
  [ "$status" -eq 0 ] || fail "$mode: a rule naming the faulting function: exit $status"
  ! grep -q "pinguard: ERROR:" "$tmp/err" || fail "$mode: the report was not suppressed"
  grep -q "matched 1 time" "$tmp/err" || fail "$mode: the rule's count is not 1"
done
[ "$fails" -eq 0 ] && echo "ok: the faulting function is named and suppressible"
exit "$fails"
