#!/usr/bin/env bash
# Intent: pinguard initializes exactly once per process. With a second copy of libpinguard.so
# preloaded under another path, the process still gets one banner, one report per violation and
# one exit summary, and a warning names the copy that stays inert.
# Usage: two_copies.sh SHIM PROGRAM ARGS... ($PG_PRELOAD: the shim, after any sanitizer runtime)
#
# One pinguard per process, even with a second copy loaded under another path.
# TEST: two_copies ARGS $<TARGET_FILE:pinguard> $<TARGET_FILE:e2e_free_during_copy> bug
set -u
shim=$1; shift
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
cp "$shim" "$tmp/libpinguard.so"
err=$tmp/stderr
LD_PRELOAD="$PG_PRELOAD:$tmp/libpinguard.so" PINGUARD_OPTIONS=verbosity=1:exitcode=0:guard=0 \
  "$@" >/dev/null 2>"$err"
status=$?
count() { grep -c -- "$1" "$err"; }
fails=0
expect() { # what count
  if [ "$2" -ne "$3" ]; then echo "FAIL: $1: $2 (want $3)"; fails=$((fails + 1)); fi
}
expect "exit status" "$status" 0
expect "startup banners" "$(count '^pinguard: mode=')" 1
expect "reports" "$(count 'pinguard: ERROR: ')" 1
expect "exit summaries" "$(count '^pinguard: [0-9]* reports\? (')" 1
expect "inert-copy warnings" "$(count "loaded twice: .* is active, $tmp/libpinguard.so stays inert")" 1
[ "$fails" -eq 0 ] && echo "ok: one pinguard in a process with two copies loaded" || cat "$err"
exit "$fails"
