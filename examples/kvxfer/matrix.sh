#!/bin/sh
# matrix.sh: the kvxfer demo. Runs the bug matrix (none / store-no-sync / retrieve-early-release)
# x transport x xfer on the current runtime and prints one table of corrupted blocks.
#   matrix.sh KVXFER [extra kvxfer options...]
# With PG_SHIM=/path/libpinguard.so, each cell also runs under LD_PRELOAD with
# PINGUARD_OPTIONS=mode=audit (column: report lines matching "pinguard: ERROR:" on stderr) and
# mode=enforce (column: corrupted blocks); PG_SHIM_OPTIONS (e.g. "guard=1") is appended to both.
# PG_AUDIT_LATENCY_US, when set, is the simulated device latency of the audit runs only (e.g. 0:
# audit must report whether or not the device finished first); the bare runs, which must show the
# corruption, and the enforce runs, which must prevent it, keep the caller's latency.
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

# run_cell <out> <err> bare|audit|enforce [extra kvxfer options...]: runs the cell ($args, whose
# expectation is $exp) without pinguard or under it in that mode, stdout and stderr to the files.
# Without pinguard, a buggy cell corrupts only when its race happens (the CPU touched a buffer
# while the device still worked on it): a bare run that corrupted nothing says nothing either way
# and is run again, up to three times. Audit and enforce run once: pinguard reports every access
# the program never ordered, whether or not the device had finished it, so an audit cell reports
# in every run, and enforce must leave nothing corrupted whether or not it had anything to wait for.
run_cell() {
  out=$1 err=$2 mode=$3
  shift 3
  tries=0
  while :; do
    tries=$((tries + 1))
    if [ "$mode" = bare ]; then
      # shellcheck disable=SC2086
      "$kvxfer" $args "$@" >"$out" 2>"$err"
    elif [ "$mode" = audit ] && [ -n "${PG_AUDIT_LATENCY_US:-}" ]; then
      # shellcheck disable=SC2086
      SIMCUDA_LATENCY_US=$PG_AUDIT_LATENCY_US LD_PRELOAD="$preload" \
        PINGUARD_OPTIONS="mode=$mode$shim_opts" "$kvxfer" $args "$@" >"$out" 2>"$err"
    else
      # shellcheck disable=SC2086
      LD_PRELOAD="$preload" PINGUARD_OPTIONS="mode=$mode$shim_opts" \
        "$kvxfer" $args "$@" >"$out" 2>"$err"
    fi
    [ "$mode" = bare ] && [ "$exp" = corrupt ] && [ "$tries" -lt 3 ] &&
      [ "$(corrupted "$out")" = 0 ] || break
  done
}
status=0
header="bug                     transport xfer    expect   corrupted"
[ -n "${PG_SHIM:-}" ] && header="$header  audit-reports  enforce-corrupted"
echo "$header"
for bug in none store-no-sync retrieve-early-release; do
  for transport in serialize shm; do
    for xfer in kernel memcpy batch; do
      args="--bug=$bug --transport=$transport --xfer=$xfer"
      exp=$(expected $bug $transport)
      run_cell "$tmp/out" "$tmp/err" bare "$@"
      c=$(corrupted "$tmp/out")
      mark=" "
      ok "$exp" "$c" || { mark="!"; status=1; }
      line=$(printf '%-23s %-9s %-7s %-8s %s%-9s' "$bug" "$transport" "$xfer" "$exp" "$mark" "$c")
      if [ -n "${PG_SHIM:-}" ]; then
        run_cell "$tmp/aout" "$tmp/aerr" audit "$@"
        reports=$(grep -c 'pinguard: ERROR:' "$tmp/aerr")
        run_cell "$tmp/eout" "$tmp/eerr" enforce "$@"
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
