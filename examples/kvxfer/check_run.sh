#!/bin/sh
# check_run.sh: runs kvxfer and checks its verdict, for CTest.
#   check_run.sh clean|corrupt|usage KVXFER [ARGS...]
# clean: exit 0 and "0 of M blocks corrupted"; corrupt: exit 1 and "N of M" with N > 0;
# usage: exit 2 with exactly one line on stderr.
# A buggy engine corrupts only when its race happens: the CPU must touch a buffer while the
# device still works on it, and a host slowed down enough (a sanitizer, a loaded machine) can
# let every copy finish first. So a "corrupt" run that exits 0 with nothing corrupted says
# nothing either way and is run again, up to three times. A "clean" run is never repeated.
expect=$1
shift
err_file="${TMPDIR:-/tmp}/kvxfer-check.$$"
run_once() {
  out=$("$@" 2>"$err_file")
  rc=$?
  err=$(cat "$err_file")
  rm -f "$err_file"
  printf '%s\n' "$out"
  [ -n "$err" ] && printf '%s\n' "$err" >&2
  verdict=$(printf '%s\n' "$out" |
    sed -n 's/^\([0-9][0-9]*\) of \([0-9][0-9]*\) blocks corrupted$/\1 \2/p')
}
run_once "$@"
tries=1
while [ "$expect" = corrupt ] && [ "$rc" -eq 0 ] && [ "${verdict%% *}" = 0 ] && [ "$tries" -lt 3 ]; do
  tries=$((tries + 1))
  echo "check_run: the race did not happen (nothing corrupted); run $tries of 3" >&2
  run_once "$@"
done
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
