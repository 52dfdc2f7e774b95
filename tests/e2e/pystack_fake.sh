#!/bin/sh
# pystack_fake.sh PROGRAM unknown|garbage|torn: runs pystack_fake.c's build under pinguard (audit,
# guard pages on) and checks its reports: both violations reported with the program's own
# native frames, no Python frame, and for an unknown version exactly one notice.
#
# TEST: pystack.fake_${variant} ARGS $<TARGET_FILE:e2e_pystack_fake_${variant}> ${variant}
#   PASS_REGEX "^ok " FOR variant IN unknown garbage torn
prog=$1 what=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT
env LD_PRELOAD="${PG_PRELOAD:?}" PINGUARD_OPTIONS="mode=audit:guard=1:guard_min_bytes=4096" \
  SIMCUDA_LATENCY_US=200000 "$prog" 2>"$err"
rc=$?
fail() { echo "FAIL ($what): $*"; cat "$err"; exit 1; }
[ "$rc" = 23 ] || fail "exit status $rc, want 23"
grep -q "ERROR: free-during-device-access" "$err" || fail "no free-during-device-access report"
grep -q "ERROR: cpu-read-during-device-write" "$err" || fail "no cpu-read-during-device-write report"
grep -Eq "#[0-9]+ 0x[0-9a-f]+ in free_early" "$err" || fail "the free's stack lacks free_early"
grep -Eq "#[0-9]+ 0x[0-9a-f]+ in read_early" "$err" || fail "the read's stack lacks read_early"
grep -Eq "^    #[0-9]+ [^0]" "$err" && fail "a frame that is not native"
notes=$(grep -c "WARNING: Python 3.14 is not a version pinguard can read" "$err")
if [ "$what" = unknown ]; then
  [ "$notes" = 1 ] || fail "$notes version notices, want 1"
else
  [ "$notes" = 0 ] || fail "a version notice for 3.11"
fi
echo "ok ($what)"
