#!/usr/bin/env bash
# bench/run.sh: runs pinguard's overhead benchmarks and prints a markdown table, then, as the
# last line, one JSON object with the headline figures (see docs/PERFORMANCE.md). The
# instruction counts (bench/instr.sh, callgrind) run when valgrind is installed and no sanitizer
# runtime is preloaded.
#   bench/run.sh [--quick|--smoke] [--engine] [BUILD_DIR]
#     (default)  the full run: at most 10 minutes on 2 cores
#     --quick    the same table with smaller counts, under a minute
#     --smoke    tiny counts, a few seconds: checks the pipeline (CTest bench.run), not speed
#     --engine   the engine rows only (one device, llama3-8b, eight devices), at the level's counts
# BUILD_DIR (or $PG_BUILD_DIR) is a build tree (configured if new) in which the benchmark
# targets are brought up to date; the default is build-bench-run/ (RelWithDebInfo). Modes run
# interleaved, repetition by repetition, in a rotated order, so that drift on a loaded machine
# hits every mode alike; each figure is a median.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

level=full
only_engine=0
build=${PG_BUILD_DIR:-}
for a in "$@"; do
  case $a in
    --quick) level=quick ;;
    --smoke) level=smoke ;;
    --engine) only_engine=1 ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $a" >&2; exit 2 ;;
    *) build=$a ;;
  esac
done

# ---- the build -----------------------------------------------------------------------------
targets=(pinguard simcuda kvxfer bench_copy bench_scale bench_guard bench_stubpin)
if [ -z "$build" ] && [ -n "${BENCH_SHIM:-}" ] && [ -n "${BENCH_BIN:-}" ] &&
   [ -n "${BENCH_KVXFER:-}" ]; then
  build=.   # every path comes from the environment (the CTest smoke run)
else
  build=${build:-$root/build-bench-run}
  export PATH="/usr/local/cuda/bin:$PATH"
  mkdir -p "$build"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      >"$build/bench-configure.log" 2>&1 ||
      { cat "$build/bench-configure.log" >&2; exit 1; }
  fi
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$build/bench-build.log" 2>&1 ||
    { tail -n 40 "$build/bench-build.log" >&2; exit 1; }
fi
shim=${BENCH_SHIM:-$build/lib/libpinguard.so}
stub=${BENCH_STUBPIN:-$build/bench/libbench_stubpin.so}
bin=${BENCH_BIN:-$build/bench}
kvxfer=${BENCH_KVXFER:-$build/examples/kvxfer/kvxfer}
rt=${BENCH_PRELOAD_RT:-}   # a sanitizer runtime that must come first in LD_PRELOAD, if any
for f in "$shim" "$stub" "$bin/bench_copy" "$bin/bench_scale" "$bin/bench_guard" "$kvxfer"; do
  [ -e "$f" ] || { echo "run.sh: missing $f (build the bench targets first)" >&2; exit 1; }
done

# ---- sizes per level -----------------------------------------------------------------------
case $level in
  full)  reps=9; copies=300000; scale_copies=100000; regions=(10 1000 100000)
         inflight=(10 10000); chunks=64; llama_chunks=8; llama_reps=3; guard_iters=2000
         instr_copies=(8192 2048 8192) ;;
  quick) reps=5; copies=30000; scale_copies=30000; regions=(10 1000 100000)
         inflight=(10 10000); chunks=16; llama_chunks=4; llama_reps=1; guard_iters=500
         instr_copies=(4096 1024 2048) ;;
  smoke) reps=1; copies=3000; scale_copies=3000; regions=(10 1000)
         inflight=(10 100); chunks=4; llama_chunks=0; llama_reps=0; guard_iters=50
         instr_copies=(512 64 256) ;;
esac
# instr_copies: copies per thread of the short instruction-count run (1 thread, 8 threads, and
# the scaling geometry); bench/instr.sh also runs twice (three times for scaling) as many.
scale_hi_regions=${regions[${#regions[@]}-1]}
scale_hi_inflight=${inflight[${#inflight[@]}-1]}

out=$(mktemp -d "${TMPDIR:-/tmp}/pg-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
results=$out/results.tsv
: >"$results"

# One result line: the last JSON line the command printed, tagged "group<TAB>mode<TAB>json".
# A benchmark that fails (non-zero exit: a crash, or pinguard reporting a violation, which
# must not happen in these clean workloads) stops the run.
record() { # group mode env-assignments... -- command...
  local group=$1 mode=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local log=$out/last.log
  if ! env ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" "${envs[@]}" "$@" \
      >"$log" 2>"$log.err"; then
    echo "run.sh: $group/$mode failed: $*" >&2
    tail -n 20 "$log.err" >&2
    exit 1
  fi
  local json
  json=$(grep '^{' "$log" | tail -n 1)
  [ -n "$json" ] || { echo "run.sh: $group/$mode printed no result" >&2; exit 1; }
  printf '%s\t%s\t%s\n' "$group" "$mode" "$json" >>"$results"
}

# mode name -> environment. "none" preloads nothing of pinguard's.
mode_env() { # mode [extra preload appended after the shim]
  local with="LD_PRELOAD=${rt}${shim}${2:+:$2}"
  case $1 in
    none)     echo "LD_PRELOAD=${rt}${2:-}" ;;
    off)      echo "$with PINGUARD_OPTIONS=mode=off" ;;
    # guard is explicit everywhere: its default (auto) turns it on in audit and enforce, and
    # the tables keep the tracking cost and the guard-page cost apart.
    audit)    echo "$with PINGUARD_OPTIONS=mode=audit:guard=0" ;;
    enforce)  echo "$with PINGUARD_OPTIONS=mode=enforce:guard=0" ;;
    auditg)   echo "$with PINGUARD_OPTIONS=mode=audit:guard=1" ;;
    guard)    echo "$with PINGUARD_OPTIONS=mode=enforce:guard=1" ;;
    # The guard cycle reads while the copy is in flight on purpose: a report each time.
    guardrep) echo "$with PINGUARD_OPTIONS=mode=enforce:guard=1:exitcode=0:max_reports=1" ;;
  esac
}

# rotate N words...: the words, starting at the (N mod count)-th. Each repetition runs the modes
# in a different order, so that a cost tied to a position (the first process after another
# program's large exit, say) does not always land on the same mode.
rotate() {
  local n=$1; shift
  local k=$(( n % $# )) i
  local w=("$@")
  for ((i = 0; i < ${#w[@]}; i++)); do echo "${w[(i + k) % ${#w[@]}]}"; done
}

progress() { [ "$level" = smoke ] || echo "run.sh: $*" >&2; }
t_start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

if [ "$only_engine" -eq 0 ]; then
# ---- 1. per-copy microbenchmark (simcuda latency 0: only the call itself costs) ----------------
progress "microbenchmark ($reps repetitions)"
# One discarded run first: the first process after a build pays for cold caches and page cache.
SIMCUDA_LATENCY_US=0 "$bin/bench_copy" --copies "$copies" >/dev/null 2>&1 || true
for ((r = 1; r <= reps; r++)); do
  for threads in 1 2; do
    for m in $(rotate "$r" none event off audit enforce auditg guard); do
      # "event": no pinguard, but a cudaEventRecord after each copy, as pinguard records one.
      ev_args=()
      [ "$m" = event ] && ev_args=(--record-event)
      # shellcheck disable=SC2046
      record "copy_t$threads" "$m" SIMCUDA_LATENCY_US=0 $(mode_env "${m/event/none}") -- \
        "$bin/bench_copy" --threads "$threads" --copies "$copies" "${ev_args[@]}"
    done
  done
done

# ---- 2. scaling: registered regions x accesses held in flight --------------------------------
progress "scaling ($reps repetitions)"
for ((r = 1; r <= reps; r++)); do
  for nr in "${regions[@]}"; do
    for nf in "${inflight[@]}"; do
      for m in $(rotate "$r" none audit enforce); do
        # shellcheck disable=SC2046
        record "scale_${nr}_${nf}" "$m" SIMCUDA_LATENCY_US=0 $(mode_env "$m" "$stub") -- \
          "$bin/bench_scale" --regions "$nr" --inflight "$nf" --copies "$scale_copies"
      done
    done
  done
done

# ---- 3. guard-page costs -------------------------------------------------------------------
progress "guard pages"
for ((r = 1; r <= reps; r++)); do
  record guard_raw none -- "$bin/bench_guard" --raw --iters "$guard_iters"
  # shellcheck disable=SC2046
  record guard_cycle sync_none SIMCUDA_LATENCY_US=0 $(mode_env none) -- \
    "$bin/bench_guard" --sync --iters "$guard_iters"
  # shellcheck disable=SC2046
  record guard_cycle sync_enforce SIMCUDA_LATENCY_US=0 $(mode_env enforce) -- \
    "$bin/bench_guard" --sync --iters "$guard_iters"
  # shellcheck disable=SC2046
  record guard_cycle fault_guard SIMCUDA_LATENCY_US=0 $(mode_env guardrep) -- \
    "$bin/bench_guard" --iters "$guard_iters"
done

fi # not --engine

# ---- 4. the engine: kvxfer store + retrieve, default simcuda latency -------------------------
engine_round() { # group model chunks repetition [devices]
  local group=$1 model=$2 n=$3 r=$4 devices=${5:-1}
  local dev_env=() dev_args=()
  if [ "$devices" -gt 1 ]; then dev_env=(SIMCUDA_DEVICES="$devices"); dev_args=(--devices "$devices"); fi
  for m in $(rotate "$r" none audit enforce auditg guard syncall); do
    local mm=$m extra=()
    if [ "$m" = syncall ]; then mm=none; extra=(--sync=device); fi
    # shellcheck disable=SC2046
    record "$group" "$m" "${dev_env[@]}" $(mode_env "$mm") -- \
      "$kvxfer" --json --model "$model" --chunks "$n" "${dev_args[@]}" "${extra[@]}"
  done
}
progress "engine, default geometry ($reps repetitions)"
"$kvxfer" --chunks "$chunks" >/dev/null 2>&1 || true   # discarded, as above
for ((r = 1; r <= reps; r++)); do engine_round engine_small small "$chunks" "$r"; done
# Eight engines at once, each on its own simulated device and thread, sharing one pinned
# allocator (kvxfer --devices 8): the same bytes in all, chunks/8 chunks per engine (at least 4).
dev8_chunks=$((chunks / 8 > 4 ? chunks / 8 : 4))
progress "engine, 8 devices ($reps repetitions)"
for ((r = 1; r <= reps; r++)); do engine_round engine_dev8 small "$dev8_chunks" "$r" 8; done
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
# llama3-8b holds about 3 x chunks x 32 MiB (cache, store copy, pageable buffers) plus staging.
if [ "$llama_chunks" -gt 0 ] && [ "$avail_kb" -gt $((llama_chunks * 3 * 32 * 1024 + 2097152)) ]
then
  progress "engine, llama3-8b ($llama_reps repetitions)"
  for ((r = 1; r <= llama_reps; r++)); do
    engine_round engine_llama llama3-8b "$llama_chunks" "$r"
  done
fi

# ---- 5. instructions per copy (callgrind; deterministic, so one run of each) ----------------
if [ "$only_engine" -eq 1 ]; then
  :
elif command -v "${VALGRIND:-valgrind}" >/dev/null && [ -z "$rt" ]; then
  progress "instruction counts (callgrind)"
  instr_env=(BENCH_SHIM="$shim" BENCH_STUBPIN="$stub" BENCH_BIN="$bin")
  record instr copy_t1 "${instr_env[@]}" -- "$here/instr.sh" --copies "${instr_copies[0]}"
  record instr copy_t8 "${instr_env[@]}" -- "$here/instr.sh" --threads 8 \
    --copies "${instr_copies[1]}"
  record instr scale "${instr_env[@]}" -- "$here/instr.sh" --case scale \
    --regions "$scale_hi_regions" --inflight "$scale_hi_inflight" --copies "${instr_copies[2]}"
else
  progress "instruction counts skipped (no valgrind, or a sanitizer build)"
fi

t_end=$(date +%s)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
echo "Machine: $(nproc) cores, ${cpu},"\
  "load average at start ${load_start}, at end $(cut -d' ' -f1-3 /proc/loadavg); $level run."
echo
python3 "$here/report.py" "$results" --level "$level" --seconds $((t_end - t_start)) \
  --scale-hi "scale_${scale_hi_regions}_${scale_hi_inflight}" --scale-lo "scale_10_10"
