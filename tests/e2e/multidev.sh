#!/usr/bin/env bash
# Intent: many devices in one process (multidev.c, SIMCUDA_DEVICES=8). Checks:
#   clean, audit and enforce, guard pages on: zero reports, every byte right, the current device
#     never changed behind the program's back;
#   bugs, audit (JSON): exactly six reports, one per bug, each naming the device of its GPU
#     access in its "device" member: free-during-device-access on devices 1, 5 and 7,
#     device-access-conflict on device 2, cpu-read-during-device-write on device 2 (the program
#     reads the buffer after synchronizing device 3 only: device 2's copy into it, which enforce
#     waited for, is still ordered before nothing the host did) and on device 4;
#   bugs, enforce (text): the same six reports, "(device N)" in each, 0 bytes corrupted, the
#     current device intact after every wait (fault handler included), exit status 0.
# Usage: multidev.sh PROGRAM ($PG_PRELOAD: the shim, after any sanitizer runtime)
#
# TEST: multidev ARGS $<TARGET_FILE:e2e_multidev> TIMEOUT 120
set -u
prog=$1
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
export SIMCUDA_DEVICES=8
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { # name mode extra-options args...
  local name=$1 mode=$2 extra=$3; shift 3
  LD_PRELOAD="$PG_PRELOAD" PINGUARD_OPTIONS="mode=$mode:guard=1:guard_min_bytes=4096$extra" \
    "$prog" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}
show() { echo "--- $1 stdout:"; cat "$tmp/$1.out"; echo "--- $1 stderr:"; head -n 80 "$tmp/$1.err"; }
expect_line() { # name line
  grep -qx -- "$2" "$tmp/$1.out" || { fail "$1: no line '$2'"; show "$1"; }
}

for mode in audit enforce; do
  run clean.$mode $mode "" clean
  [ "$(cat "$tmp/clean.$mode.rc")" -eq 0 ] || fail "clean.$mode: exit $(cat "$tmp/clean.$mode.rc")"
  n=$(grep -c "pinguard: ERROR: " "$tmp/clean.$mode.err")
  [ "$n" -eq 0 ] || { fail "clean.$mode: $n reports"; show clean.$mode; }
  expect_line clean.$mode "device mismatches: 0"
  expect_line clean.$mode "corrupted: 0"
done

run bugs.audit audit ":log_format=json" bugs
[ "$(cat "$tmp/bugs.audit.rc")" -eq 23 ] || fail "bugs.audit: exit $(cat "$tmp/bugs.audit.rc")"
expect_line bugs.audit "device mismatches: 0"
python3 - "$tmp/bugs.audit.err" <<'PY' || { fail "bugs.audit: reports"; show bugs.audit; }
import json, sys
got = []
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    o = json.loads(line)
    if o.get("type") != "report":
        continue
    devs = sorted({g["device"] for g in o["gpu"]})
    assert all(isinstance(g["device"], int) for g in o["gpu"]), o["gpu"]
    got.append((o["kind"], devs))
want = [("free-during-device-access", [1]), ("device-access-conflict", [2]),
        ("cpu-read-during-device-write", [2]), ("cpu-read-during-device-write", [4]), ("free-during-device-access", [5]),
        ("free-during-device-access", [7])]
if got != want:
    print("reports (kind, devices of the in-flight accesses):", got, "want", want)
    sys.exit(1)
PY

run bugs.enforce enforce "" bugs
[ "$(cat "$tmp/bugs.enforce.rc")" -eq 0 ] || fail "bugs.enforce: exit $(cat "$tmp/bugs.enforce.rc")"
expect_line bugs.enforce "device mismatches: 0"
expect_line bugs.enforce "corrupted: 0"
n=$(grep -c "pinguard: ERROR: " "$tmp/bugs.enforce.err")
[ "$n" -eq 6 ] || { fail "bugs.enforce: $n reports (want 6)"; show bugs.enforce; }
for d in 1 2 4 5 7; do
  want=1; [ "$d" -eq 2 ] && want=2
  c=$(grep -c "^  in-flight GPU access: .* on stream 0x[0-9a-f]* (device $d), " "$tmp/bugs.enforce.err")
  [ "$c" -eq "$want" ] || { fail "bugs.enforce: device $d named $c times (want $want)"; show bugs.enforce; }
done

[ "$fails" -eq 0 ] && echo "ok: 8 devices, clean and one bug per device" || exit 1
