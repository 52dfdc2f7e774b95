#!/usr/bin/env bash
# bench/gpu.sh OUTDIR: pinguard's validation on a real GPU (an H200 with CUDA 13 and PyTorch,
# no network), in at most 8 minutes. Everything it finds goes to OUTDIR:
#   env.txt            GPU, driver, toolkit, PyTorch
#   build.log          the nvcc/CMake build of libpinguard.so, kvxfer_cuda and the helpers
#   guard_check.jsonl  guard pages on cudaHostAlloc / registered private / registered shared
#                      memory: does a CPU access to an in-flight buffer wait? (none/audit/enforce)
#   matrix.txt         kvxfer's bug matrix on real CUDA: no shim, audit, enforce
#   torch.jsonl        the incident's two bugs in PyTorch (pickle after a non_blocking copy; a
#                      recycled pin_memory() temporary under a raw-pointer kernel), per mode
#   torch_suite.jsonl  tests/torch's scenarios (the same Python the simcuda suite runs) with the
#                      CUDA build of its kernels (libpgkv.so), per mode and pinned-memory mode
#   micro.md           bench_copy built against the real libcudart: ns per cudaMemcpyAsync
#                      with and without pinguard (bench/report.py's tables)
#   engine.md          kvxfer store+retrieve throughput ratios (bench/report.py's engine table)
#   host_probe.jsonl   bench/gpu/host_probe.c: per kind of pinned memory (cudaHostAlloc,
#                      malloc, MAP_SHARED and MAP_HUGETLB registered), the maps flags, whether
#                      mprotect works, whether DMA proceeds under PROT_NONE, the copy-on-write
#                      check, mappings added per guard, what a fork child inherits; the cost of
#                      a protect/unprotect pair with 1, 8 and 32 busy threads
#   legacy_order.jsonl bench/gpu/legacy_order.cu: which calls order the host after work on the
#                      legacy stream's other side (blocking streams, and back): one line a case
#   torchcopy.md       bench/torch_copy.py (PyTorch's 4 KiB copy_(non_blocking=True) loop): CPU
#                      time per copy with no pinguard, audit and enforce (default options) and
#                      PyTorch's CUDA sanitizer, alternating runs, median ratios (torchcopy.tsv)
#   summary.txt        one line per step: ok / failed / skipped, and the key outcomes
# Steps run in order of importance and are skipped once the time budget is spent. PG_GPU_STEPS
# (names, space-separated: legacy_order torchcopy guard_check host_probe matrix torch_pickle ...)
# runs only those steps after the build, which then builds only what they need.
# Needs: cmake, gcc, nvcc (sm_90), python3 with torch; uthash.h (set UTHASH_INCLUDE_DIR if it is
# not in a system include path). Criterion is not needed (a stub satisfies the configure step).
set -uo pipefail
out=${1:?usage: bench/gpu.sh OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export PATH="/usr/local/cuda/bin:$PATH"
budget=${PG_GPU_BUDGET_S:-460}   # leaves a margin under 8 minutes
t0=$(date +%s)
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
left() { echo $((budget - ($(date +%s) - t0))); }
# selected NAME: whether PG_GPU_STEPS leaves step NAME in (the build is always in).
selected() { [ -z "${PG_GPU_STEPS:-}" ] || [ "$1" = build ] || [[ " $PG_GPU_STEPS " == *" $1 "* ]]; }
# step NAME SECONDS: whether there is time for a step expected to take about SECONDS.
step() {
  if ! selected "$1"; then return 1; fi
  if [ "$(left)" -lt "$2" ]; then note "$1: skipped (time budget)"; return 1; fi
  echo "==> $1 ($(left) s left)" >&2
}

# ---- 0. the machine ---------------------------------------------------------------------------
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  nvcc --version 2>&1 | tail -n 2
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  python3 -c 'import triton; print("triton", triton.__version__)' 2>&1 | tail -n 1
  command -v ninja || echo "ninja: not found (load_inline cannot build)"
  nproc; grep -m1 'model name' /proc/cpuinfo
} >"$out/env.txt" 2>&1

# ---- 1. build ---------------------------------------------------------------------------------
build=$out/build
shim=$build/lib/libpinguard.so
kvx=$build/examples/kvxfer/kvxfer_cuda
if step build 60; then
  cfg=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_WITH_NVCC=ON -DCMAKE_CUDA_ARCHITECTURES=90)
  [ -n "${UTHASH_INCLUDE_DIR:-}" ] && cfg+=("-DUTHASH_INCLUDE_DIR=$UTHASH_INCLUDE_DIR")
  # The top level insists on Criterion for the unit tests; none are built here, so a stub
  # header and an empty library satisfy it where Criterion is not installed.
  if ! echo '#include <criterion/criterion.h>' | gcc -E -x c - >/dev/null 2>&1; then
    mkdir -p "$out/stub/criterion"
    : >"$out/stub/criterion/criterion.h"
    echo 'void pg_criterion_stub(void) {}' | gcc -shared -fPIC -x c - -o "$out/stub/libcriterion.so"
    cfg+=("-DCRITERION_INCLUDE_DIR=$out/stub" "-DCRITERION_LIBRARY=$out/stub/libcriterion.so")
  fi
  # Only the shim and the probe when PG_GPU_STEPS names nothing else that needs a build.
  full=1
  [ -n "${PG_GPU_STEPS:-}" ] && [ -z "$(echo " $PG_GPU_STEPS " | sed 's/ legacy_order / /g; s/ torchcopy / /g' | tr -d ' ')" ] && full=0
  build_rest() {
    timeout 300 cmake --build "$build" -j"$(nproc)" --target pinguard kvxfer_cuda &&
      nvcc -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared -o "$out/libhostread.so" \
        "$here/gpu/hostread.cu" &&
      nvcc -arch=sm_90 -cudart shared -o "$out/guard_check" "$here/gpu/guard_check.cu" &&
      nvcc -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared -I"$root/tests/torch" \
        -o "$out/libpgkv.so" "$root/tests/torch/pgkv_kernels.cu" "$root/tests/torch/pgkv_api.c" &&
      gcc -O2 -std=gnu11 -D_GNU_SOURCE -I"$(dirname "$(command -v nvcc)")/../include" \
        "$here/gpu/host_probe.c" -o "$out/host_probe" \
        -L"$(dirname "$(command -v nvcc)")/../lib64" -lcudart -lpthread \
        -Wl,-rpath,"$(dirname "$(command -v nvcc)")/../lib64" &&
      gcc -O2 -std=gnu11 -D_GNU_SOURCE -I"$(dirname "$(command -v nvcc)")/../include" \
        "$here/bench_copy.c" -o "$out/bench_copy" \
        -L"$(dirname "$(command -v nvcc)")/../lib64" -lcudart -lpthread \
        -L"$(dirname "$(command -v nvcc)")/../lib64/stubs" -lcuda \
        -Wl,-rpath,"$(dirname "$(command -v nvcc)")/../lib64"
  }
  {
    nvcc -arch=sm_90 -o "$out/legacy_order" "$here/gpu/legacy_order.cu" &
    if cmake -S "$root" -B "$build" "${cfg[@]}"; then
      if [ "$full" = 1 ]; then build_rest
      else timeout 300 cmake --build "$build" -j"$(nproc)" --target pinguard; fi
    fi
    wait
  } >"$out/build.log" 2>&1
  if [ -e "$shim" ] && { [ "$full" = 0 ] || { [ -e "$kvx" ] && [ -e "$out/guard_check" ]; }; }; then
    note "build: ok"
  else
    note "build: FAILED (see build.log)"; tail -n 30 "$out/build.log" >&2
  fi
fi
[ -e "$shim" ] || { note "no libpinguard.so: nothing else can run"; exit 1; }

# mode -> PINGUARD_OPTIONS ("" = no preload). Guard pages explicit, whatever the default is.
opts_of() {
  case $1 in
    audit) echo "mode=audit:guard=1:exitcode=0:print_stats=1" ;;
    enforce) echo "mode=enforce:guard=1:exitcode=0:print_stats=1" ;;
    *) echo "" ;;
  esac
}
# run_mode MODE LOGPREFIX cmd...: stdout to LOGPREFIX.out, stderr to LOGPREFIX.err.
run_mode() {
  local mode=$1 log=$2; shift 2
  if [ "$mode" = none ]; then
    timeout 120 "$@" >"$log.out" 2>"$log.err"
  else
    timeout 120 env LD_PRELOAD="$shim${LD_PRELOAD:+:$LD_PRELOAD}" \
      PINGUARD_OPTIONS="$(opts_of "$mode")" "$@" >"$log.out" 2>"$log.err"
  fi
}
reports() { grep -c 'pinguard: ERROR:' "$1" 2>/dev/null || true; }
mkdir -p "$out/logs"

# ---- 1b. the legacy stream's implicit order on the real device ----------------------------------
if [ -x "$out/legacy_order" ] && step legacy_order 20; then
  timeout 60 "$out/legacy_order" >"$out/legacy_order.jsonl" 2>"$out/logs/legacy_order.err"
  note "legacy_order: exit $?; cases that differ from pinguard's reading:" \
    "$(grep -o '"case":"[a-z0-9_]*","covered":[a-z]*,"expect":[a-z]*,"agrees":false' \
      "$out/legacy_order.jsonl" | cut -d'"' -f4 | tr '\n' ' ')"
fi

# ---- 1c. PyTorch's copy loop: the CPU time pinguard adds, default options --------------------------
if step torchcopy 120; then
  tsv=$out/torchcopy.tsv
  : >"$tsv"
  copies=${PG_GPU_TORCHCOPY_COPIES:-40000}
  for rep in 1 2 3 4 5; do
    [ "$(left)" -gt 25 ] || break
    # The order rotates from one repetition to the next, so that drift hits all alike.
    set -- none audit enforce torch_sanitizer
    for _ in $(seq $((rep % 4))); do set -- "$@" "$1"; shift; done
    for m in "$@"; do
      env=()
      case $m in
        audit) env=(LD_PRELOAD="$shim") ;;
        enforce) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=enforce) ;;
        torch_sanitizer) env=(TORCH_CUDA_SANITIZER=1) ;;
      esac
      line=$(env -u PINGUARD_OPTIONS timeout 120 env "${env[@]}" python3 "$here/torch_copy.py" \
        "$copies" 2>>"$out/logs/torchcopy.err" | grep '^{' | tail -n 1)
      [ -n "$line" ] && printf '%s\t%s\t%s\n' "$rep" "$m" "$line" >>"$tsv"
    done
  done
  python3 - "$tsv" >"$out/torchcopy.md" 2>>"$out/logs/torchcopy.err" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    rep, mode, js = line.rstrip("\n").split("\t")
    runs.setdefault(rep, {})[mode] = json.loads(js)
print("| configuration | CPU ns per copy (median) | ratio to none (median) | wall ns per copy |")
print("|---|---|---|---|")
for m in ("none", "audit", "enforce", "torch_sanitizer"):
    reps = [r for r in runs.values() if m in r and "none" in r]
    if not reps:
        continue
    cpu = statistics.median(r[m]["cpu_ns_per_copy"] for r in reps)
    ratio = statistics.median(r[m]["cpu_ns_per_copy"] / r["none"]["cpu_ns_per_copy"] for r in reps)
    wall = statistics.median(r[m]["ns_per_copy"] for r in reps)
    print(f"| {m} | {cpu:.0f} | {ratio:.3f} (n={len(reps)}) | {wall:.0f} |")
PY
  note "torchcopy: $(grep '^| audit' "$out/torchcopy.md" | tr -s ' ')"
fi

# ---- 2. guard pages on each kind of pinned memory ------------------------------------------------
if [ -e "$out/guard_check" ] && step guard_check 30; then
  : >"$out/guard_check.jsonl"
  for m in none audit enforce; do
    run_mode "$m" "$out/logs/guard_check.$m" "$out/guard_check"
    rc=$?
    if grep -q '^{' "$out/logs/guard_check.$m.out"; then
      n=$(reports "$out/logs/guard_check.$m.err")
      sed "s/^{/{\"mode\":\"$m\",\"rc\":$rc,\"reports\":$n,/" \
        "$out/logs/guard_check.$m.out" >>"$out/guard_check.jsonl"
    else
      echo "{\"mode\":\"$m\",\"rc\":$rc,\"error\":\"no output; see logs/guard_check.$m.err\"}" \
        >>"$out/guard_check.jsonl"
    fi
  done
  # Expected: none waits for nothing; enforce waits in all 6 cases; no mprotect warning.
  waited=$(grep '"mode":"enforce"' "$out/guard_check.jsonl" | grep -c '"waited":true')
  warn=$(grep -c 'mprotect fails' "$out"/logs/guard_check.*.err | awk -F: '{s+=$2} END {print s+0}')
  note "guard_check: enforce waited in $waited of 6 cases; mprotect warnings: $warn"
fi

# ---- 2b. the host under guard pages (no pinguard: what a guard would do, done by hand) ---------
# As root, reserve two huge pages for the MAP_HUGETLB case if none are free (put back after).
if [ -e "$out/host_probe" ] && step host_probe 30; then
  hp_before=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo)
  if [ -w /proc/sys/vm/nr_hugepages ] && [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" = 0 ]; then
    echo $((hp_before + 2)) >/proc/sys/vm/nr_hugepages
  fi
  timeout 240 "$out/host_probe" >"$out/host_probe.jsonl" 2>"$out/logs/host_probe.err"
  rc=$?
  [ -n "$hp_before" ] && [ -w /proc/sys/vm/nr_hugepages ] && echo "$hp_before" >/proc/sys/vm/nr_hugepages
  note "host_probe: exit $rc; cow: $(grep -o '"kind":"[a-z]*"\|"cow":"[a-z-]*"' "$out/host_probe.jsonl" | tr '\n' ' ')"
fi

# ---- 3. the bug matrix on real CUDA ------------------------------------------------------------
if [ -e "$kvx" ] && step matrix 90; then
  PG_SHIM=$shim PG_SHIM_OPTIONS=guard=1 timeout 240 sh "$root/examples/kvxfer/matrix.sh" "$kvx" \
    >"$out/matrix.txt" 2>"$out/logs/matrix.err"
  note "matrix: exit $? (1 = some cell differs from the simulated expectation; see matrix.txt)"
fi

# ---- 4. PyTorch reproductions -----------------------------------------------------------------
torch_case() { # label args...
  local label=$1; shift
  for m in none audit enforce; do
    run_mode "$m" "$out/logs/torch.$label.$m" python3 "$here/gpu/torch_repro.py" "$@" \
      --lib "$out/libhostread.so" --build-dir "$out/inline_build"
    local rc=$? line
    line=$(grep '^{' "$out/logs/torch.$label.$m.out" | tail -n 1)
    [ -n "$line" ] || line="{\"error\":\"no output (exit $rc)\"}"
    echo "${line/#\{/{\"mode\":\"$m\",\"reports\":$(reports "$out/logs/torch.$label.$m.err"),}" \
      >>"$out/torch.jsonl"
  done
}
: >"$out/torch.jsonl"
step torch_pickle 40 && torch_case pickle pickle
step torch_recycle_ctypes 40 && torch_case recycle_ctypes recycle --path ctypes
step torch_recycle_chevron 40 && torch_case recycle_chevron recycle --path chevron
step torch_recycle_triton 50 && torch_case recycle_triton recycle --path triton
step torch_recycle_inline 120 && torch_case recycle_inline recycle --path inline
[ -s "$out/torch.jsonl" ] && note "torch: $(wc -l <"$out/torch.jsonl") runs in torch.jsonl"

# ---- 4b. tests/torch's scenarios on the real GPU -----------------------------------------------
# The same scenario.py as the simcuda suite; the kernels wait PGKV_SPIN_NS after they start, so
# the CPU is certainly first, as SIMCUDA_LATENCY_US makes it on simcuda. Expected (as on simcuda):
# corrupted_blocks > 0 without pinguard for the two bugs, reports in audit, 0 in enforce (with
# cudaHostAlloc), and nothing anywhere for --fixed and the discipline scenarios.
if [ -e "$out/libpgkv.so" ] && step torch_suite 90; then
  : >"$out/torch_suite.jsonl"
  # case: pinned-memory mode (c = cudaHostAlloc, r = pinned_use_cuda_host_register), modes, args
  for case in "c none,audit,enforce retrieve" "c none,audit,enforce store" \
    "r none,audit,enforce retrieve" "r none,audit,enforce store" "c audit retrieve --fixed" \
    "c audit store --fixed" "c audit d2h-item" "c audit repin" "c audit side-streams"; do
    read -r kind modes sc <<<"$case"
    conf=""
    [ "$kind" = r ] && conf="pinned_use_cuda_host_register:True"
    for m in ${modes//,/ }; do
      [ "$(left)" -gt 15 ] || break 2
      log="$out/logs/torch_suite.${sc// /_}.$kind.$m"
      PGKV_LIB="$out/libpgkv.so" PGKV_SPIN_NS=200000000 PYTORCH_CUDA_ALLOC_CONF="$conf" \
        run_mode "$m" "$log" python3 "$root/tests/torch/scenario.py" $sc
      line=$(grep '^{' "$log.out" | tail -n 1)
      [ -n "$line" ] || line="{\"error\":\"no output; see $log.err\"}"
      echo "${line/#\{/{\"mode\":\"$m\",\"reports\":$(reports "$log.err"),}" \
        >>"$out/torch_suite.jsonl"
    done
  done
  run_mode none "$out/logs/prefetch_roundtrip" python3 "$root/examples/torch/prefetch_roundtrip.py"
  note "torch_suite: $(wc -l <"$out/torch_suite.jsonl") runs; prefetch_roundtrip: $(head -c 60 \
    "$out/logs/prefetch_roundtrip.out")"
fi

# ---- 5. the per-copy microbenchmark on the real runtime ------------------------------------------
if [ -e "$out/bench_copy" ] && step micro 40; then
  tsv=$out/micro.tsv
  : >"$tsv"
  for _ in 1 2 3; do
    for threads in 1 2; do
      for m in none event off audit enforce auditg guard; do
        env=() extra=()
        case $m in
          event) extra=(--record-event) ;;
          off) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=off) ;;
          audit) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=audit:guard=0) ;;
          enforce) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=enforce:guard=0) ;;
          auditg) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=audit:guard=1) ;;
          guard) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=enforce:guard=1) ;;
        esac
        line=$(timeout 60 env "${env[@]}" "$out/bench_copy" --threads "$threads" \
          --copies 50000 "${extra[@]}" 2>>"$out/logs/micro.err" | grep '^{' | tail -n 1)
        [ -n "$line" ] && printf '%s\t%s\t%s\n' "copy_t$threads" "$m" "$line" >>"$tsv"
      done
    done
  done
  python3 "$here/report.py" "$tsv" --level gpu >"$out/micro.md" 2>>"$out/logs/micro.err"
  note "micro: $(tail -n 1 "$out/micro.md")"
fi

# ---- 6. engine overhead ratios ----------------------------------------------------------------
if [ -e "$kvx" ] && step engine 60; then
  tsv=$out/engine.tsv
  : >"$tsv"
  for _ in 1 2 3; do
    for geo in "engine_small small 64" "engine_llama llama3-8b 16"; do
      read -r group model chunks <<<"$geo"
      [ "$(left)" -gt 20 ] || break 2
      for m in none audit enforce auditg guard syncall; do
        env=() extra=()
        case $m in
          audit) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=audit:guard=0) ;;
          enforce) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=enforce:guard=0) ;;
          auditg) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=audit:guard=1) ;;
          guard) env=(LD_PRELOAD="$shim" PINGUARD_OPTIONS=mode=enforce:guard=1) ;;
          syncall) extra=(--sync=device) ;;
        esac
        line=$(timeout 60 env "${env[@]}" "$kvx" --json --model "$model" --chunks "$chunks" \
          "${extra[@]}" 2>>"$out/logs/engine.err" | grep '^{' | tail -n 1)
        [ -n "$line" ] && printf '%s\t%s\t%s\n' "$group" "$m" "$line" >>"$tsv"
      done
    done
  done
  python3 "$here/report.py" "$tsv" --level gpu >"$out/engine.md" 2>>"$out/logs/engine.err"
  note "engine: $(tail -n 1 "$out/engine.md")"
fi
note "total: $(($(date +%s) - t0)) s"
