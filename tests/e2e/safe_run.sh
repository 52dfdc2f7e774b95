#!/usr/bin/env bash
# Runs a program under the preloaded shim (or without it) and checks that it survived: exit
# status and stdout, whatever pinguard reported (the programs it runs check pinguard's safety,
# not its findings).
#   safe_run.sh [--no-preload] [--exit N] [--stdout REGEX] [--stderr REGEX] [--no-stderr REGEX]
#               [--count REGEX N] -- prog args...
# --stdout, --stderr and --no-stderr may be given several times: each one must hold.
# --count REGEX N: exactly N lines of stderr match REGEX.
# PG_PRELOAD names libpinguard.so; PINGUARD_OPTIONS comes from PG_OPTIONS (default mode=audit).
set -u
preload=1 want_exit=0 count_re="" count_n=""
want_stdout=() want_stderr=() bad_stderr=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-preload) preload=0; shift ;;
    --exit) want_exit=$2; shift 2 ;;
    --stdout) want_stdout+=("$2"); shift 2 ;;
    --stderr) want_stderr+=("$2"); shift 2 ;;
    --no-stderr) bad_stderr+=("$2"); shift 2 ;;
    --count) count_re=$2; count_n=$3; shift 3 ;;
    --) shift; break ;;
    *) echo "safe_run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
if [ "$preload" = 1 ]; then
  env LD_PRELOAD="${PG_PRELOAD:?PG_PRELOAD must name libpinguard.so}" \
      PINGUARD_OPTIONS="${PG_OPTIONS:-mode=audit}" "$@" >"$out" 2>"$err"
else
  "$@" >"$out" 2>"$err"
fi
status=$?
fail() {
  echo "FAIL: $*"
  echo "--- stdout:"; cat "$out"; echo "--- stderr:"; head -c 20000 "$err"
  exit 1
}
# 77: the program found what it needs missing here (CTest's SKIP_RETURN_CODE).
if [ "$status" -eq 77 ]; then cat "$out"; exit 77; fi
[ "$status" -eq "$want_exit" ] || fail "exit status $status, expected $want_exit"
for re in ${want_stdout[@]+"${want_stdout[@]}"}; do
  grep -Eq "$re" "$out" || fail "stdout does not match /$re/"
done
for re in ${want_stderr[@]+"${want_stderr[@]}"}; do
  grep -Eq "$re" "$err" || fail "stderr does not match /$re/"
done
for re in ${bad_stderr[@]+"${bad_stderr[@]}"}; do
  ! grep -Eq "$re" "$err" || fail "stderr matches /$re/"
done
if [ -n "$count_re" ]; then
  got=$(grep -Ec "$count_re" "$err")
  [ "$got" -eq "$count_n" ] || fail "$got stderr lines match /$count_re/, expected $count_n"
fi
echo "ok: exit=$status"
cat "$out"; head -n 40 "$err"
