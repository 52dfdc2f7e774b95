#!/bin/sh
# check_run.sh: runs kvxfer and checks its verdict, for CTest.
#   check_run.sh clean|corrupt|usage KVXFER [ARGS...]
# clean: exit 0 and "0 of M blocks corrupted"; corrupt: exit 1 and "N of M" with N > 0;
# usage: exit 2 with exactly one line on stderr.
expect=$1
shift
out=$("$@" 2>"${TMPDIR:-/tmp}/kvxfer-check.$$")
rc=$?
err=$(cat "${TMPDIR:-/tmp}/kvxfer-check.$$")
rm -f "${TMPDIR:-/tmp}/kvxfer-check.$$"
printf '%s\n' "$out"
[ -n "$err" ] && printf '%s\n' "$err" >&2
verdict=$(printf '%s\n' "$out" |
  sed -n 's/^\([0-9][0-9]*\) of \([0-9][0-9]*\) blocks corrupted$/\1 \2/p')
fail() { echo "check_run: FAIL: $*" >&2; exit 1; }
case $expect in
clean)
  [ "$rc" -eq 0 ] || fail "expected exit 0, got $rc"
  set -- $verdict
  [ "$#" -eq 2 ] && [ "$1" -eq 0 ] && [ "$2" -gt 0 ] || fail "expected '0 of M blocks corrupted'"
  ;;
corrupt)
  [ "$rc" -eq 1 ] || fail "expected exit 1, got $rc"
  set -- $verdict
  [ "$#" -eq 2 ] && [ "$1" -gt 0 ] || fail "expected 'N of M blocks corrupted' with N > 0"
  ;;
usage)
  [ "$rc" -eq 2 ] || fail "expected exit 2, got $rc"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "expected one line on stderr"
  ;;
*)
  fail "unknown expectation '$expect'"
  ;;
esac
echo "check_run: ok ($expect)"
