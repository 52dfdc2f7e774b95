#!/usr/bin/env bash
# The production counters (stats_path=): read the file while a workload runs and check that it
# is well-formed Prometheus text (node_exporter's textfile format), that the counters grow, that
# no writer thread exists without the option, that a fork child gets a writer of its own, and
# that the exit leaves the final file and no temporary one.
#   stats_file.sh STATS_WORKLOAD
#
# TEST: stats_file ARGS $<TARGET_FILE:e2e_stats_workload>
set -u
prog=${1:?usage: stats_file.sh STATS_WORKLOAD}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*; do echo "--- $f"; cat "$f"; done; exit 1; }
run() { # options args... (exec: a run in the background has the program's own pid)
  local o=$1; shift
  exec env LD_PRELOAD="${PG_PRELOAD:?}" PINGUARD_OPTIONS="mode=audit:guard=0${o:+:$o}" "$prog" "$@"
}
value() { # file metric -> the sample's value
  sed -n "s/^$2{pid=\"[0-9]*\"} \\([0-9.]*\\)\$/\\1/p" "$1"
}
well_formed() { # file: every line a HELP, a TYPE or a pinguard sample; each sample typed first
  awk '
    /^# HELP pinguard_[a-z_]+ .+$/ { next }
    /^# TYPE pinguard_[a-z_]+ (counter|gauge)$/ { typed[$3] = 1; next }
    /^pinguard_[a-z_]+\{pid="[0-9]+"(,kind="[a-z-]+")?\} [0-9]+(\.[0-9]+)?$/ {
      name = $0; sub(/\{.*/, "", name); if (!(name in typed)) { print "untyped: " $0; bad = 1 }
      next }
    { print "bad line: " $0; bad = 1 }
    END { exit bad }' "$1"
}

# Without the option: no file, and one thread fewer than with it.
(run "" 0.1) >"$tmp/plain.out" 2>"$tmp/plain.err" || fail "plain run failed"
plain=$(sed -n 's/^threads=//p' "$tmp/plain.out")

(run "stats_path=$tmp/pg.prom:stats_interval_s=1" 4) >"$tmp/run.out" 2>"$tmp/run.err" &
pid=$!
file="$tmp/pg.$pid.prom"
for _ in $(seq 100); do [ -s "$file" ] && break; sleep 0.05; done
[ -s "$file" ] || fail "no $file after 5 s"
cp "$file" "$tmp/first"
sleep 2.2
cp "$file" "$tmp/second"
wait "$pid" || fail "the workload failed"
with=$(sed -n 's/^threads=//p' "$tmp/run.out")
[ "$with" -eq $((plain + 1)) ] || fail "threads: $plain without stats_path, $with with it"

for f in first second "pg.$pid.prom"; do well_formed "$tmp/$f" || fail "$f is not well-formed"; done
for m in copies_tracked_total kernels_tracked_total waits_total wait_seconds_total \
         guard_faults_total regions inflight; do
  [ -n "$(value "$tmp/first" "pinguard_$m")" ] || fail "no pinguard_$m sample"
done
grep -q "^pinguard_reports_total{pid=\"$pid\",kind=\"free-during-device-access\"} 0\$" \
  "$tmp/first" || fail "no reports_total sample for free-during-device-access"
c1=$(value "$tmp/first" pinguard_copies_tracked_total)
c2=$(value "$tmp/second" pinguard_copies_tracked_total)
c3=$(value "$tmp/pg.$pid.prom" pinguard_copies_tracked_total)
k1=$(value "$tmp/first" pinguard_kernels_tracked_total)
k2=$(value "$tmp/second" pinguard_kernels_tracked_total)
[ "$c1" -ge 1 ] && [ "$c2" -gt "$c1" ] && [ "$c3" -ge "$c2" ] ||
  fail "copies_tracked did not grow: $c1, $c2, at exit $c3"
[ "$k2" -gt "$k1" ] || fail "kernels_tracked did not grow: $k1, $k2"
[ "$(value "$tmp/second" pinguard_regions)" = 1 ] || fail "regions gauge is not 1 while running"
[ "$(value "$tmp/pg.$pid.prom" pinguard_regions)" = 0 ] || fail "regions gauge is not 0 at exit"
! ls "$tmp"/*.tmp >/dev/null 2>&1 || fail "a temporary file was left behind"

# fork: the child inherits no thread; pinguard restarts the writer there, with its own file.
mkdir -p "$tmp/dir"
# ThreadSanitizer refuses new threads after a multi-threaded fork unless told otherwise (glibc
# itself supports it: its thread and malloc state is reset before the child's fork handlers run).
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}die_after_fork=0"
(run "stats_path=$tmp/dir/:stats_interval_s=1" 1.5 fork) >"$tmp/fork.out" 2>"$tmp/fork.err" &
pid=$!
wait "$pid" || fail "the forking workload failed"
child=$(sed -n 's/^child \([0-9]*\) threads=.*/\1/p' "$tmp/fork.out")
cthreads=$(sed -n 's/^child [0-9]* threads=//p' "$tmp/fork.out")
[ "$cthreads" = 2 ] || fail "the child has $cthreads threads, not itself and the writer"
[ -s "$tmp/dir/pinguard.$child.prom" ] || fail "no file for the child $child"
[ -s "$tmp/dir/pinguard.$pid.prom" ] || fail "no file for the parent $pid"
well_formed "$tmp/dir/pinguard.$child.prom" || fail "the child's file is not well-formed"
[ "$(value "$tmp/dir/pinguard.$child.prom" pinguard_copies_tracked_total)" = 0 ] ||
  fail "the child's file counts the parent's copies"
echo "ok: copies $c1 -> $c2 -> $c3, kernels $k1 -> $k2, threads $plain -> $with, child writer"
