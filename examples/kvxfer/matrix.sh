#!/bin/sh
# matrix.sh: the kvxfer demo. Runs the bug matrix (none / store-no-sync / retrieve-early-release)
# x transport x xfer on the current runtime and prints one table of corrupted blocks.
#   matrix.sh KVXFER [extra kvxfer options...]
# With PG_SHIM=/path/libpinguard.so, each cell also runs under LD_PRELOAD with
# PINGUARD_OPTIONS=mode=audit (column: report lines matching "pinguard: ERROR:" on stderr) and
# mode=enforce (column: corrupted blocks); PG_SHIM_OPTIONS (e.g. "guard=1") is appended to both.
# Exit 0 when every cell is as expected, 1 otherwise.
set -u
kvxfer=${1:?usage: matrix.sh KVXFER [kvxfer options...]}
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvxfer-matrix.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# corrupted <stdout file>: N from "N of M blocks corrupted", or "err" when the run printed none.
corrupted() {
  n=$(sed -n 's/^\([0-9][0-9]*\) of [0-9][0-9]* blocks corrupted$/\1/p' "$1")
  echo "${n:-err}"
}

# What a cell should show without pinguard: store-no-sync only breaks the serialize transport.
expected() { # bug transport
  if [ "$1" = none ] || { [ "$1" = store-no-sync ] && [ "$2" = shm ]; }; then
    echo clean
  else
    echo corrupt
  fi
}

# ok <expectation> <count>: does the count meet the expectation?
ok() {
  case $1:$2 in
  *:err) return 1 ;;
  clean:0 | corrupt:[1-9]* | any:*) return 0 ;;
  *) return 1 ;;
  esac
}

preload="${PG_SHIM:-}${LD_PRELOAD:+:$LD_PRELOAD}"
shim_opts="${PG_SHIM_OPTIONS:+:$PG_SHIM_OPTIONS}"
status=0
header="bug                     transport xfer    expect   corrupted"
[ -n "${PG_SHIM:-}" ] && header="$header  audit-reports  enforce-corrupted"
echo "$header"
for bug in none store-no-sync retrieve-early-release; do
  for transport in serialize shm; do
    for xfer in kernel memcpy batch; do
      args="--bug=$bug --transport=$transport --xfer=$xfer"
      exp=$(expected $bug $transport)
      # A buggy cell corrupts only when its race happens; a run in which every copy finished
      # before the CPU touched the buffer (nothing corrupted) is run again, up to three times.
      tries=0
      while :; do
        tries=$((tries + 1))
        # shellcheck disable=SC2086
        "$kvxfer" $args "$@" >"$tmp/out" 2>"$tmp/err"
        c=$(corrupted "$tmp/out")
        [ "$exp" = corrupt ] && [ "$c" = 0 ] && [ "$tries" -lt 3 ] || break
      done
      mark=" "
      ok "$exp" "$c" || { mark="!"; status=1; }
      line=$(printf '%-23s %-9s %-7s %-8s %s%-9s' "$bug" "$transport" "$xfer" "$exp" "$mark" "$c")
      if [ -n "${PG_SHIM:-}" ]; then
        # Audit lets the bug run, so its race may not happen in a given run (the copy finished
        # before the CPU touched the buffer: nothing corrupted and nothing to report). Such a
        # run says nothing either way and is run again, up to three times; a run that
        # corrupted blocks without a report is a miss at once.
        tries=0
        while :; do
          tries=$((tries + 1))
          # shellcheck disable=SC2086
          LD_PRELOAD="$preload" PINGUARD_OPTIONS="mode=audit$shim_opts" \
            "$kvxfer" $args "$@" >"$tmp/aout" 2>"$tmp/aerr"
          reports=$(grep -c 'pinguard: ERROR:' "$tmp/aerr")
          [ "$exp" = corrupt ] && [ "$reports" = 0 ] && [ "$(corrupted "$tmp/aout")" = 0 ] &&
            [ "$tries" -lt 3 ] || break
        done
        # shellcheck disable=SC2086
        LD_PRELOAD="$preload" PINGUARD_OPTIONS="mode=enforce$shim_opts" \
          "$kvxfer" $args "$@" >"$tmp/eout" 2>"$tmp/eerr"
        ec=$(corrupted "$tmp/eout")
        amark=" " emark=" "
        ok "$exp" "$reports" || { amark="!"; status=1; }
        ok clean "$ec" || { emark="!"; status=1; }
        line=$(printf '%s  %s%-13s  %s%s' "$line" "$amark" "$reports" "$emark" "$ec")
      fi
      echo "$line"
    done
  done
done
if [ $status -eq 0 ]; then
  echo "matrix: every cell as expected"
else
  echo "matrix: cells marked '!' differ from the expectation"
fi
exit $status
