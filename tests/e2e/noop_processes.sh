#!/usr/bin/env bash
# Intent: preloading pinguard into processes that never touch CUDA changes nothing: same exit
# codes, same output, nothing on stderr. $PG_PRELOAD names the shim (and any sanitizer runtime).
#
# TEST: noop_processes
set -u
fails=0
check() { # expected-status expected-stdout command...
  local want_status=$1 want_out=$2; shift 2
  local out err status
  err=$(mktemp)
  out=$(LD_PRELOAD="$PG_PRELOAD" PINGUARD_OPTIONS="${PINGUARD_OPTIONS:-mode=enforce}" "$@" 2>"$err")
  status=$?
  if [ "$status" -ne "$want_status" ] || [ "$out" != "$want_out" ] || [ -s "$err" ]; then
    echo "FAIL: $* -> status $status (want $want_status), stdout '$out' (want '$want_out')"
    cat "$err"; fails=$((fails + 1))
  else
    echo "ok: $*"
  fi
  rm -f "$err"
}
check 0 "" /bin/true
check 1 "" /bin/false
check 3 "" sh -c 'exit 3'
check 0 "" python3 -c pass
check 7 "" python3 -c 'import sys; sys.exit(7)'
check 0 "3" sh -c 'printf "a\nb\nc\n" | sort | wc -l'
check 0 "hello" sh -c 'echo hello | cat'
check 0 "ok" sh -c '( ( true ) ); ( true ); echo ok'   # forks inside a forked child
check 0 "ok" python3 -c 'import subprocess; print(subprocess.run(["sh","-c","echo ok"],capture_output=True,text=True).stdout.strip())'
exit $fails
