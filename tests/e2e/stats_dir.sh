#!/usr/bin/env bash
# stats_path into directories that do not exist yet: pinguard creates them (as a directory, with
# a trailing /, and as the directory of a file name), and a path it cannot create gets one warning
# that names the file.
#   stats_dir.sh STATS_WORKLOAD
#
# TEST: stats_dir ARGS $<TARGET_FILE:e2e_stats_workload>
set -u
prog=${1:?usage: stats_dir.sh STATS_WORKLOAD}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; find "$tmp" -print; for f in "$tmp"/*.err; do echo "--- $f"; cat "$f"; done; exit 1; }
run() { # name options args... (exec: $! is the program's own pid)
  local name=$1 o=$2; shift 2
  (exec env LD_PRELOAD="${PG_PRELOAD:?}" PINGUARD_OPTIONS="mode=audit:guard=0:$o" "$prog" "$@") \
    >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  wait "$pid" || fail "$name: the workload failed"
}

run dir "stats_path=$tmp/a/b/:stats_interval_s=0" 0.1
[ -s "$tmp/a/b/pinguard.$pid.prom" ] || fail "no $tmp/a/b/pinguard.$pid.prom"
run file "stats_path=$tmp/c/d/pg.prom:stats_interval_s=1" 1.3
[ -s "$tmp/c/d/pg.$pid.prom" ] || fail "no $tmp/c/d/pg.$pid.prom"
! grep -q "pinguard: WARNING" "$tmp/dir.err" "$tmp/file.err" || fail "a warning for a path it created"

# A directory that cannot be made (a regular file is in the way): one warning naming the file.
touch "$tmp/blocker"
run bad "stats_path=$tmp/blocker/sub/pg.prom:stats_interval_s=1" 1.3
want="pinguard: WARNING: stats_path: cannot rewrite the counters file $tmp/blocker/sub/pg.$pid.prom ("
grep -qF "$want" "$tmp/bad.err" || fail "the warning does not name the file: want '$want'"
[ "$(grep -c "pinguard: WARNING: stats_path" "$tmp/bad.err")" = 1 ] || fail "more than one warning"
echo "ok: missing directories created; an impossible path warned about once, by name"
