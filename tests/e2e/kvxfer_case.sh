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
