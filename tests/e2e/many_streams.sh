#!/usr/bin/env bash
# Intent: every stream tracked, past any small limit (many_streams.c: 1,200 streams over 8
# simulated devices, guard pages on, audit, print_stats=1). Checks:
#   bug: exactly one report, cpu-read-during-device-write, whose GPU access is on the last
#     stream's device;
#   fixed: no report;
#   untracked: a copy whose completion event cannot be made (audit_event_every=1) counts in
#     accesses_untracked, not in copies_tracked;
#   both: print_stats agrees with what was tracked: copies_tracked = the copies made (N+1),
#     accesses_retired = the same (every device synchronized before exit), accesses_untracked 0,
#     and no warning that a stream could not be tracked.
# Usage: many_streams.sh PROGRAM [STREAMS] ($PG_PRELOAD: the shim, after any sanitizer runtime)
#
# TEST: many_streams ARGS $<TARGET_FILE:e2e_many_streams> TIMEOUT 120
set -u
prog=$1
n=${2:-1200}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
export SIMCUDA_DEVICES=8 SIMCUDA_LATENCY_US=0
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
show() { echo "--- $1 stdout:"; cat "$tmp/$1.out"; echo "--- $1 stderr:"; head -n 60 "$tmp/$1.err"; }
stat() { sed -n "s/^  $1: \([0-9]*\) (.*/\1/p" "$tmp/$2.err"; }

for mode in bug fixed; do
  LD_PRELOAD="$PG_PRELOAD" \
    PINGUARD_OPTIONS="mode=audit:guard=1:guard_min_bytes=4096:print_stats=1:exitcode=0" \
    "$prog" "$mode" "$n" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
  rc=$?
  [ "$rc" -eq 0 ] || { fail "$mode: exit $rc"; show "$mode"; continue; }
  grep -qx "streams: $n" "$tmp/$mode.out" || { fail "$mode: did not finish"; show "$mode"; }
  reports=$(grep -c "pinguard: ERROR: " "$tmp/$mode.err")
  want=0; [ "$mode" = bug ] && want=1
  [ "$reports" -eq "$want" ] || { fail "$mode: $reports reports (want $want)"; show "$mode"; }
  if [ "$mode" = bug ]; then
    grep -q "pinguard: ERROR: cpu-read-during-device-write" "$tmp/$mode.err" ||
      { fail "bug: not a cpu-read-during-device-write"; show "$mode"; }
    dev=$(((n - 1) % 8))
    grep -q "^  in-flight GPU access: .* (device $dev), " "$tmp/$mode.err" ||
      { fail "bug: the report does not name the last stream's device $dev"; show "$mode"; }
  fi
  copies=$((n + 1))
  [ "$(stat copies_tracked "$mode")" = "$copies" ] ||
    { fail "$mode: copies_tracked $(stat copies_tracked "$mode") (want $copies)"; show "$mode"; }
  [ "$(stat accesses_retired "$mode")" = "$copies" ] ||
    { fail "$mode: accesses_retired $(stat accesses_retired "$mode") (want $copies)"; show "$mode"; }
  [ "$(stat accesses_untracked "$mode")" = 0 ] ||
    { fail "$mode: accesses_untracked $(stat accesses_untracked "$mode") (want 0)"; show "$mode"; }
  ! grep -q "could not be tracked" "$tmp/$mode.err" || { fail "$mode: a stream was not tracked"; show "$mode"; }
done

# A copy that cannot be tracked (here pinguard's first completion event cannot be created, with
# an event after every access) is counted untracked, not tracked: 8 streams, 9 copies, one of
# them untracked.
LD_PRELOAD="$PG_PRELOAD" SIMCUDA_FAIL=cudaEventCreateWithFlags:1 \
  PINGUARD_OPTIONS="mode=audit:guard=0:print_stats=1:exitcode=0:audit_event_every=1" \
  "$prog" fixed 8 >"$tmp/untracked.out" 2>"$tmp/untracked.err" || fail "untracked: exit $?"
[ "$(stat copies_tracked untracked)" = 8 ] && [ "$(stat accesses_untracked untracked)" = 1 ] &&
  [ "$(stat accesses_retired untracked)" = 8 ] ||
  { fail "untracked: copies_tracked/accesses_untracked/accesses_retired not 8/1/8"; show untracked; }

[ "$fails" -eq 0 ] && echo "ok: $n streams over 8 devices, each tracked" || exit 1
