#!/usr/bin/env bash
# The quick start's report (kvxfer --bug=store-no-sync under pinguard with guard pages, audit)
# names file:line: the CPU read is caught in the guard-fault handler, which cannot run addr2line,
# so its frames come from the program's own line table (it is built with debug info).
#   demo_report.sh KVXFER
#
# The quick start's report names file:line (a guard fault's frames, from the line table).
# TEST: demo_report ARGS $<TARGET_FILE:kvxfer> IF TARGET kvxfer
set -u
kvxfer=${1:?usage: demo_report.sh KVXFER}
err=$(mktemp) && trap 'rm -f "$err"' EXIT
LD_PRELOAD="${PG_PRELOAD:?}" PINGUARD_OPTIONS="mode=audit:guard=1" \
  "$kvxfer" --bug=store-no-sync --transport=serialize --xfer=kernel >/dev/null 2>"$err"
report=$(awk '/pinguard: ERROR: cpu-read/ { on = 1 } on { print } on && /^SUMMARY: / { exit }' "$err")
fail() { echo "FAIL: $*"; echo "$report"; exit 1; }
[ -n "$report" ] || { cat "$err"; fail "no cpu-read-during-device-write report"; }
echo "$report" | grep -Eq '^SUMMARY: pinguard: cpu-read-during-device-write \S*kv_pipeline\.c:[0-9]+ in kv_commit_serialize$' ||
  fail "the SUMMARY does not name kv_pipeline.c:LINE"
echo "$report" | grep -Eq '^    #[0-9]+ 0x[0-9a-f]+ in kv_store_all \S*kv_pipeline\.c:[0-9]+$' ||
  fail "the CPU read's outer frames have no file:line"
echo "ok: the demo's report names $(echo "$report" | sed -n 's/^SUMMARY: pinguard: [a-z-]* //p')"
