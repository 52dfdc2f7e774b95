#!/usr/bin/env bash
# Runs one end-to-end scenario under the preloaded shim and checks what pinguard reported.
#   run_case.sh --mode audit|enforce|none --expect KIND|none [--exit N] [--stdout REGEX] -- prog args...
# --expect KIND: at least one "pinguard: ERROR: KIND" report, and no report of another kind.
# --expect none: no report at all (the correctly synchronized twin).
# --exit N: the expected exit status. Default: 0 for none; with a report, pinguard's exitcode 23
#   in audit, and in enforce the program's own 0 (a wait prevented the violation), except for
#   wait-during-capture, which enforce could not prevent (23).
# --stderr REGEX: pinguard's output (stderr) must match, e.g. the exit summary's count.
# --mode none: run without the preload (the program must behave the same with no shim).
# The preload list comes from PG_PRELOAD (set by CTest; it may start with a sanitizer runtime).
set -u
mode=audit expect=none want_exit="" want_stdout="" want_stderr=""
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) mode=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --exit) want_exit=$2; shift 2 ;;
    --stdout) want_stdout=$2; shift 2 ;;
    --stderr) want_stderr=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run_case.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$want_exit" ]; then
  case "$expect:$mode" in
    none:*) want_exit=0 ;;
    wait-during-capture:enforce) want_exit=23 ;;
    *:enforce) want_exit=0 ;;
    *) want_exit=23 ;;
  esac
fi

out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
if [ "$mode" = none ]; then
  "$@" >"$out" 2>"$err"
else
  env LD_PRELOAD="${PG_PRELOAD:?PG_PRELOAD must name libpinguard.so}" \
      PINGUARD_OPTIONS="mode=$mode${PG_EXTRA_OPTIONS:+:$PG_EXTRA_OPTIONS}" "$@" >"$out" 2>"$err"
fi
status=$?

fail() {
  echo "FAIL: $*"
  echo "--- command: $*"; echo "--- stdout:"; cat "$out"; echo "--- stderr:"; cat "$err"
  exit 1
}
reports=$(grep -c "pinguard: ERROR: " "$err")
if [ "$expect" = none ]; then
  [ "$reports" -eq 0 ] || fail "expected no report, got $reports"
else
  matching=$(grep -c "pinguard: ERROR: $expect " "$err")
  [ "$matching" -ge 1 ] || fail "expected a $expect report, got none"
  [ "$matching" -eq "$reports" ] || fail "expected only $expect reports, got $reports in all"
fi
[ "$status" -eq "$want_exit" ] || fail "exit status $status, expected $want_exit"
if [ -n "$want_stdout" ]; then
  grep -Eq "$want_stdout" "$out" || fail "stdout does not match /$want_stdout/"
fi
if [ -n "$want_stderr" ]; then
  grep -Eq "$want_stderr" "$err" || fail "stderr does not match /$want_stderr/"
fi
echo "ok: mode=$mode expect=$expect reports=$reports exit=$status"
cat "$err" | head -n 40
