#!/usr/bin/env bash
# bench/smoke.sh: the CTest smoke runs of the benchmarks (bench.<name>). Each checks that a
# benchmark works and measures what it claims (counts from pinguard's print_stats), never how
# fast anything is (bench.instr is the exception: instruction counts are deterministic, so it
# holds a budget). Environment: BENCH_SHIM, BENCH_STUBPIN, BENCH_BIN, BENCH_KVXFER,
# BENCH_PRELOAD_RT (a sanitizer runtime to preload first, or empty), BENCH_INSTR_BUDGET.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rt=${BENCH_PRELOAD_RT:-}
fail() { echo "FAIL: $*" >&2; exit 1; }

# instr_budgets MIN_RUNTIME "instr.sh args|budget" ...: runs instr.sh for each case with its
# budget; each must pass, and its counts be plausible: the runtime's own call costs more than
# MIN_RUNTIME, and pinguard adds something (each case tracks or checks something).
instr_budgets() {
  local min_runtime=$1 t args budget
  shift
  for t in "$@"; do
    args=${t%|*} budget=${t#*|}
    # shellcheck disable=SC2086 # args is a list of words
    "$here/instr.sh" $args --budget "$budget" >"$log" 2>&1 ||
      { cat "$log"; fail "instr.sh $args, budget $budget"; }
    cat "$log"
    python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert d["runtime"] > float(sys.argv[2]) and d["added_instr_per_copy"] > 50, d
' "$log" "$min_runtime" || fail "implausible counts"
  done
}
# The value of one print_stats counter in a log.
stat() { awk -v k="$1:" '$1 == k {print $2}' "$2"; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT

case ${1:-} in
  copy) # Every mode runs and prints a positive per-call figure; tracking really happens.
    for opts in "" mode=off mode=audit:guard=0 mode=enforce:guard=0 mode=enforce:guard=1; do
      pre=$rt; [ -n "$opts" ] && pre=$rt$BENCH_SHIM
      env SIMCUDA_LATENCY_US=0 LD_PRELOAD="$pre" PINGUARD_OPTIONS="$opts:print_stats=1" \
        "$BENCH_BIN/bench_copy" --threads 2 --copies 2048 --batch 512 >"$log" 2>&1 ||
        { cat "$log"; fail "bench_copy ($opts)"; }
      grep -Eq '"ns_per_call":[0-9.]*[1-9]' "$log" || { cat "$log"; fail "no result ($opts)"; }
      case $opts in
        mode=audit|mode=enforce*)
          # 2 threads x (a warm-up batch + 2048 timed copies).
          [ "$(stat copies_tracked "$log")" = 5120 ] ||
            { cat "$log"; fail "copies_tracked ($opts)"; } ;;
      esac
      case $opts in
        # Every copy lies in a 256 KiB pinned buffer: guarded with guard=1 (a page already
        # protected for an earlier copy is not protected again), never with guard=0.
        *guard=1*) [ "$(stat guard_protects "$log")" -gt 0 ] || { cat "$log"; fail "guard=1"; } ;;
        *guard=0*) [ "$(stat guard_protects "$log")" = 0 ] || { cat "$log"; fail "guard=0"; } ;;
      esac
    done ;;
  scale) # The regions and the held in-flight copies are what the figure says they are.
    env SIMCUDA_LATENCY_US=0 LD_PRELOAD="$rt$BENCH_SHIM:$BENCH_STUBPIN" \
      PINGUARD_OPTIONS=mode=enforce:guard=0:print_stats=1 \
      "$BENCH_BIN/bench_scale" --regions 1000 --inflight 100 --copies 2048 --batch 1024 \
      >"$log" 2>&1 || { cat "$log"; fail "bench_scale"; }
    cat "$log"
    [ "$(stat regions_pinned "$log")" = 1000 ] || fail "regions_pinned"
    [ "$(stat copies_tracked "$log")" = $((100 + 1024 + 2048)) ] || fail "copies_tracked"
    [ "$(stat conflicts "$log")" = 0 ] || fail "the timed copies conflicted with the held ones"
    [ "$(stat waits "$log")" = 0 ] || fail "enforce waited"
    # Without the stub library the fillers cannot be registered: a clear error, not a hang.
    if env LD_PRELOAD="$rt" "$BENCH_BIN/bench_scale" --regions 20 --copies 10 >"$log" 2>&1; then
      fail "bench_scale ran 20 regions without libbench_stubpin.so"
    fi
    grep -q libbench_stubpin "$log" || fail "no explanation without the stub library" ;;
  guard) # Each read in the guard cycle faults and waits: the cost measured is the fault path.
    env LD_PRELOAD="$rt" "$BENCH_BIN/bench_guard" --raw --iters 20 >"$log" 2>&1 ||
      { cat "$log"; fail "bench_guard --raw"; }
    grep -q '"protect_fault_unprotect_ns"' "$log" || fail "no raw result"
    env SIMCUDA_LATENCY_US=20000 LD_PRELOAD="$rt$BENCH_SHIM" \
      PINGUARD_OPTIONS=mode=enforce:guard=1:exitcode=0:max_reports=1:print_stats=1 \
      "$BENCH_BIN/bench_guard" --iters 20 >"$log" 2>&1 || { cat "$log"; fail "bench_guard"; }
    [ "$(stat guard_faults "$log")" = 20 ] || { cat "$log"; fail "guard_faults != 20"; }
    [ "$(stat waits "$log")" = 20 ] || { cat "$log"; fail "waits != 20"; } ;;
  register) # Every registration reached pinguard's index; both windows measured something.
    env LD_PRELOAD="$rt$BENCH_SHIM:$BENCH_STUBPIN" PINGUARD_OPTIONS=mode=audit:print_stats=1 \
      "$BENCH_BIN/bench_register" --regions 2048 --window 64 --reps 1 --shuffle 1 \
      >"$log" 2>&1 || { cat "$log"; fail "bench_register"; }
    cat "$log"
    [ "$(stat regions_pinned "$log")" = 2048 ] || fail "regions_pinned"
    grep -Eq '"stub":true,"ns_per_register_at_1024":[1-9][0-9]*,"ns_per_register_at_2048":[1-9]' \
      "$log" || fail "no result" ;;
  run) # The whole pipeline: the last line is the JSON object with exactly the nine keys (the
       # one-device and eight-device engine ratios among them), and the three instruction counts
       # where valgrind runs (not under a sanitizer).
    [ -n "${BENCH_KVXFER:-}" ] || { echo "no kvxfer target: skipped"; exit 0; }
    "$here/run.sh" --smoke >"$log" || { cat "$log"; fail "run.sh --smoke"; }
    cat "$log"
    instr=0
    if command -v "${VALGRIND:-valgrind}" >/dev/null && [ -z "$rt" ]; then instr=1; fi
    tail -n 1 "$log" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
want = {"engine_enforce_vs_none", "engine_guard_vs_none", "engine_enforce_vs_syncall",
        "engine8_enforce_vs_none", "engine8_guard_vs_none", "engine8_enforce_vs_syncall",
        "added_ns_audit", "threads2_speedup", "scale_100k_vs_10"}
if sys.argv[1] == "1":
    want |= {"added_instr_per_copy", "added_instr_per_copy_8threads", "added_instr_per_copy_100k"}
assert set(d) == want, sorted(d)
assert all(isinstance(v, (int, float)) for v in d.values()), d
' "$instr" || fail "last line" ;;
  instr) # Instructions pinguard adds per tracked copy (callgrind): runtime copies with 1 and 8
         # threads, driver copies (cuMemcpyHtoDAsync_v2) with 1, each at most its budget: 1
         # thread BENCH_INSTR_BUDGET, 8 threads BENCH_INSTR_BUDGET_8THREADS (the CMake cache
         # variables PG_INSTR_BUDGET and PG_INSTR_BUDGET_8THREADS; docs/PERFORMANCE.md).
    budget1=${BENCH_INSTR_BUDGET:?BENCH_INSTR_BUDGET must be set}
    budget8=${BENCH_INSTR_BUDGET_8THREADS:-$budget1}
    for t in "1 4096 runtime $budget1" "8 2048 runtime $budget8" "1 4096 driver $budget1"; do
      set -- $t
      budget=$4
      "$here/instr.sh" --threads "$1" --copies "$2" --api "$3" --budget "$budget" >"$log" 2>&1 ||
        { cat "$log"; fail "instr.sh, $3 copies, $1 thread(s), budget $budget"; }
      cat "$log"
      # The baselines are real too: the copy and its event record cost something; and so does
      # tracking (a copy pinguard only forwarded would add a few dozen instructions).
      python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert d["runtime"] > 500 and d["record"] > 200 and d["added_instr_per_copy"] > 200, d
' "$log" || fail "implausible counts"
    done ;;
  instr_programs) # Instructions pinguard adds in loops built as real programs are (callgrind):
         # the copy loop built without frame pointers (a full stack through the program's own
         # frames to the C library's entry) at most BENCH_INSTR_BUDGET_NOFP per copy; a launch of
         # 16 and of 64 pointer parameters, none pinned, in audit and in enforce, at most
         # BENCH_INSTR_BUDGET_LAUNCH16 and BENCH_INSTR_BUDGET_LAUNCH64 (against the runtime
         # alone: such a launch is tracked by nothing); a launch with one pinned parameter at
         # most BENCH_INSTR_BUDGET_LAUNCH_PINNED (beyond the runtime's event records, as copies);
         # a Python loop launching the 16-parameter kernel through ctypes, default options, at
         # most BENCH_PYLAUNCH_RATIO times the loop's instructions without pinguard (and the
         # 16-parameter launch's budget per launch); the same loop with the first parameter
         # pinned (12 Python frames per tracked launch) at most BENCH_INSTR_BUDGET_PYLAUNCH_PINNED
         # beyond the runtime's event records.
    instr_budgets 500 "--nofp --copies 4096|${BENCH_INSTR_BUDGET_NOFP:?}" \
      "--case launch --params 16|${BENCH_INSTR_BUDGET_LAUNCH16:?}" \
      "--case launch --params 16 --mode enforce|$BENCH_INSTR_BUDGET_LAUNCH16" \
      "--case launch --params 64|${BENCH_INSTR_BUDGET_LAUNCH64:?}" \
      "--case launch --params 64 --mode enforce|$BENCH_INSTR_BUDGET_LAUNCH64" \
      "--case launch --params 16 --pinned|${BENCH_INSTR_BUDGET_LAUNCH_PINNED:?}" \
      "--case pylaunch --ratio-budget ${BENCH_PYLAUNCH_RATIO:?}|$BENCH_INSTR_BUDGET_LAUNCH16" \
      "--case pylaunch --pinned|${BENCH_INSTR_BUDGET_PYLAUNCH_PINNED:?}" ;;
  instr_scale) # Instructions with a model's worth of regions and many streams (callgrind): copies
         # rotating over 128 pinned buffers at most BENCH_INSTR_BUDGET_ROTATE per copy; with
         # 1,024 live streams over 8 devices, a copy on the last stream at most
         # BENCH_INSTR_BUDGET_STREAM_COPY, a cudaStreamSynchronize at most
         # BENCH_INSTR_BUDGET_STREAM_SYNC, a cudaEventRecord at most BENCH_INSTR_BUDGET_RECORD, a
         # cudaDeviceSynchronize at most BENCH_INSTR_BUDGET_DEVICE_SYNC; 128 streams copying from
         # the same pinned bytes at most BENCH_INSTR_BUDGET_READERS per copy.
    instr_budgets 100 "--rotate 128 --copies 4096|${BENCH_INSTR_BUDGET_ROTATE:?}" \
      "--case streams --op copy|${BENCH_INSTR_BUDGET_STREAM_COPY:?}" \
      "--case streams --op sync|${BENCH_INSTR_BUDGET_STREAM_SYNC:?}" \
      "--case streams --op record|${BENCH_INSTR_BUDGET_RECORD:?}" \
      "--case streams --op devsync --copies 256|${BENCH_INSTR_BUDGET_DEVICE_SYNC:?}" \
      "--case streams --op readers --streams 128 --devices 1 --copies 8192|${BENCH_INSTR_BUDGET_READERS:?}" ;;
  instr_torch) # PyTorch's copy loop (instr.sh --case torchcopy, callgrind): its instructions
         # with pinguard (default options) over without, outside the interpreter's and
         # PyTorch's own code, at most BENCH_TORCHCOPY_RATIO. Skipped (77) without a torch
         # Python at TORCH_PYTHON, unless CI=true, where that fails.
    tpy=${TORCH_PYTHON:?TORCH_PYTHON must be set}
    if ! "$tpy" -c 'import torch' >/dev/null 2>&1; then
      [ "${CI:-}" != true ] || fail "no torch at $tpy"
      echo "skipped: no torch at $tpy"
      exit 77
    fi
    "$here/instr.sh" --case torchcopy --ratio-budget "${BENCH_TORCHCOPY_RATIO:?}" >"$log" 2>&1 ||
      { cat "$log"; fail "instr.sh --case torchcopy, ratio budget $BENCH_TORCHCOPY_RATIO"; }
    cat "$log"
    python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert d["runtime"] > 5000 and d["added_outside_interpreter"] > 100, d
' "$log" || fail "implausible counts" ;;
  scripts) # The scripts parse; shellcheck when it is installed.
    for f in run.sh smoke.sh gpu.sh instr.sh; do bash -n "$here/$f" || fail "bash -n $f"; done
    if command -v shellcheck >/dev/null; then
      shellcheck -S warning "$here/run.sh" "$here/smoke.sh" "$here/gpu.sh" "$here/instr.sh" ||
        fail shellcheck
    fi
    for f in "$here"/report.py "$here"/gpu/*.py; do
      python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$f" || fail "$f"
    done
    python3 "$here/instr_profile_test.py" || fail "instr_profile.py's counting rules" ;;
  *) fail "usage: smoke.sh copy|scale|guard|register|run|instr|scripts" ;;
esac
echo "ok"
