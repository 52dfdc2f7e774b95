#!/usr/bin/env bash
# bench/instr.sh: the instructions pinguard adds to one tracked copy, counted with callgrind
# (deterministic, unlike time). For each case it runs the program at two lengths, N and 2N copies
# per thread, and takes the difference of the instruction counts (Ir) over the difference in
# copies (the marginal cost, free of start-up and exit), three ways: the runtime alone, the
# runtime plus one cudaEventRecord per copy, and under pinguard in audit (guard=0). Then
#   added_instr_per_copy = pinguard - (runtime + record / every)
# is what pinguard costs beyond the completion events that any completion tracking pays: one
# per `every` accesses of a stream (audit_event_every in audit, 16 by default; 1 in enforce).
# The JSON's runtime_record and record are a whole record per copy, as measured.
#   bench/instr.sh [--case copy|scale|launch] [--api runtime|driver] [--threads T] [--copies N]
#                  [--nofp] [--rotate R] [--params P] [--pinned] [--mode audit|enforce] [--budget B]
#                  [--event-every K] [--profile DIR]
#     --case copy   (default) bench_copy: T threads (default 1), each its own stream, 4 KiB
#                   host->device cudaMemcpyAsync; N defaults to 8192
#     --rotate R    (case copy) each copy reads the next of R pinned buffers (one region each),
#                   as a model's per-layer buffers are copied, instead of offsets in one buffer
#     --nofp        (case copy) bench_copy_nofp: the same loop built -O2 without frame pointers,
#                   run on the main thread (its stack goes through main to the C library's
#                   entry), as most programs are built
#     --case launch bench_launch: N (default 4096) launches of a kernel with P (default 16)
#                   pointer parameters, all device pointers; --pinned: the first one points into
#                   a pinned buffer. A launch that touches no pinned memory is tracked by nothing,
#                   so its added_instr_per_copy is measured against the runtime alone (no event
#                   record); with --pinned against runtime + record, as copies are
#     --mode M      pinguard's mode (default audit)
#     --event-every K  (audit) run pinguard with audit_event_every=K (default: the option's
#                   default), and count K accesses per completion event in the floor
#     --api driver  the copies are the driver's cuMemcpyHtoDAsync_v2 instead (case copy; the
#                   baseline's event record stays the runtime's cudaEventRecord, which is what
#                   pinguard's completion event costs in either layer)
#     --case scale  bench_scale: R regions registered (--regions, default 100,000) and F copies
#                   held in flight (--inflight, default 10,000), then the timed copies; N
#                   defaults to 8192 (runs at N and 3N)
#     --case streams bench_streams: S live streams (--streams, default 1024) over D simulated
#                   devices (--devices, default 8), then N (default 1024) of --op: copy (on the
#                   last stream), readers (S streams copying from the same bytes), sync
#                   (cudaStreamSynchronize), record (cudaEventRecord) or devsync
#                   (cudaDeviceSynchronize); the copy ops are measured against runtime + record,
#                   the others against the runtime alone (they add no completion event)
#     --case pylaunch a Python loop (bench/py_launch.py --kernel P, /usr/bin/python3 or
#                   $PYTHON) launching through ctypes, from 12 Python frames, a kernel with P
#                   (--params, default 16) pointer parameters, none pinned: what a serving
#                   engine's launch loop pays. Measured against the same loop without pinguard
#                   (tracked by nothing, so no record); pinguard runs with its default options
#                   (guard pages and Python stacks on), not guard=0. N defaults to 6,400. The
#                   JSON gains "ratio": the loop's instructions with pinguard over without.
#                   With --pinned the kernel's first parameter points into a pinned buffer (a
#                   tracked launch: a stack with the 12 Python frames, a completion event), each
#                   batch of 64 behind the gate, measured against runtime + record as the
#                   launch case's --pinned is (the ratio then over runtime + record)
#     --case torchcopy PyTorch's loop of 4 KiB pinned.copy_(dev, non_blocking=True)
#                   (bench/torch_copy.py, the torch venv's python: $TORCH_PYTHON, default
#                   .venv-torch/bin/python) on simcuda, with pinguard's default options, against
#                   the same loop without pinguard; N defaults to 640 (a multiple of 64). One
#                   run per configuration: callgrind starts counting after PyTorch's import and
#                   the warm-up (--instr-atstart=no; torch_copy.py's marks, through
#                   libbench_cgmarks.so or $BENCH_CGMARKS), and dumps the counts of a loop of N
#                   copies and of one of 2N (about a minute a run). The JSON gains "ratio", as
#                   for pylaunch, and "added_outside_interpreter" and
#                   "ratio_outside_interpreter": the same counting only the objects pinguard's
#                   work runs in (its library, the runtime, the C library, the loader), since
#                   the interpreter's and PyTorch's own counts move by hundreds per copy between
#                   runs with the heap's layout (instr_profile.py work --only)
#     --budget B    exit 1 when added_instr_per_copy is above B (CTest bench.instr)
#     --ratio-budget R  (pylaunch, torchcopy) exit 1 when the ratio (torchcopy: the ratio
#                   outside the interpreter) is above R
#     --profile DIR keep the callgrind files in DIR and write DIR/profile.CASE.tT.md
#                   (bench/instr_profile.py): the marginal inclusive and self instructions per
#                   copy of each pinguard function, and the self instructions per copy of every
#                   function, audit minus runtime + record (minus the runtime alone where
#                   pinguard records an event per several accesses: its share is then included)
# Each count leaves out the thread hand-off (the C library's waits and wakes, whose number
# depends on how the scheduler interleaved the threads) and charges the C library's allocator a
# flat 100 instructions per call (what a call costs moves with the heap's layout; see
# instr_profile.py work); pinguard_allocs_per_copy is how many allocator calls pinguard itself
# makes per copy (0 in steady state; the budget check fails above 0.05), and both programs
# run with --gate (each batch waits behind a host function until it is enqueued, so what pinguard
# does per copy does not depend on how far the stream's worker got): two invocations then agree
# within about 30 instructions per copy. Prints one JSON line. Environment: BENCH_SHIM,
# BENCH_STUBPIN, BENCH_BIN (as for smoke.sh; default: the build tree build/), BENCH_PYKERNEL and
# PYTHON (pylaunch: the kernel library, default BENCH_BIN/libbench_pykernel.so, and the
# interpreter, default /usr/bin/python3), VALGRIND (default
# valgrind). simcuda runs with SIMCUDA_LATENCY_US=0, so only the calls themselves cost.
set -euo pipefail
# A failed run inside $(...) (marginal, work_ir) must stop the script, not yield an empty figure.
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
case=copy api=runtime threads=1 copies="" budget="" profile="" regions=100000 inflight=10000
nofp=0 params=16 pinned=0 pgmode=audit rotate=1 streams=1024 devices="" op=copy ratio_budget=""
event_every=""
while [ $# -gt 0 ]; do
  case $1 in
    --case) case=$2; shift 2 ;;
    --api) api=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --copies) copies=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --ratio-budget) ratio_budget=$2; shift 2 ;;
    --regions) regions=$2; shift 2 ;;
    --inflight) inflight=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --nofp) nofp=1; shift ;;
    --rotate) rotate=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --devices) devices=$2; shift 2 ;;
    --op) op=$2; shift 2 ;;
    --params) params=$2; shift 2 ;;
    --pinned) pinned=1; shift ;;
    --mode) pgmode=$2; shift 2 ;;
    --event-every) event_every=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "instr.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
shim=${BENCH_SHIM:-$root/build/lib/libpinguard.so}
stub=${BENCH_STUBPIN:-$root/build/bench/libbench_stubpin.so}
bin=${BENCH_BIN:-$root/build/bench}
vg=${VALGRIND:-valgrind}
command -v "$vg" >/dev/null || { echo "instr.sh: $vg not found" >&2; exit 2; }
for f in "$shim" "$stub" "$bin/bench_copy" "$bin/bench_scale" "$bin/bench_launch" \
    "$bin/bench_copy_nofp" "$bin/bench_streams"; do
  [ -e "$f" ] || { echo "instr.sh: missing $f (build the bench targets first)" >&2; exit 2; }
done

# pgopts: the options of the audit runs beside the mode; the Python loops keep the defaults.
count_flag=--copies untracked=0 simenv=() pgopts=guard=0 marks=0 marks_lib=""
case $case in
  copy)  copies=${copies:-8192}; long=$((2 * copies))
         prog=("$bin/bench_copy" --threads "$threads" --gate); pre=""; per_run=$threads
         [ "$nofp" = 0 ] || { prog=("$bin/bench_copy_nofp" --inline --gate); threads=1; per_run=1; }
         [ "$api" = runtime ] || prog+=(--driver)
         [ "$rotate" = 1 ] || prog+=(--regions "$rotate") ;;
  launch) copies=${copies:-4096}; long=$((2 * copies)); threads=1
         prog=("$bin/bench_launch" --params "$params" --gate); pre=""; per_run=1
         count_flag=--launches
         if [ "$pinned" = 1 ]; then prog+=(--pinned); else untracked=1; fi ;;
  streams) copies=${copies:-1024}; long=$((2 * copies)); threads=1
         devices=${devices:-8}
         prog=("$bin/bench_streams" --streams "$streams" --op "$op"); pre=""; per_run=1
         count_flag=--ops
         case $op in copy|readers) ;; sync|record|devsync) untracked=1 ;;
           *) echo "instr.sh: --op copy|readers|sync|record|devsync" >&2; exit 2 ;; esac ;;
  pylaunch) copies=${copies:-6400}; long=$((2 * copies)); threads=1
         helper=${BENCH_PYKERNEL:-$bin/libbench_pykernel.so}
         [ -e "$helper" ] || { echo "instr.sh: missing $helper (build bench_pykernel)" >&2; exit 2; }
         prog=("${PYTHON:-/usr/bin/python3}" "$here/py_launch.py" --kernel "$params" "$helper")
         pre="" per_run=1
         simenv=(PYTHONHASHSEED=0) # one dictionary layout in every run (as torchcopy)
         count_flag="" untracked=1 pgopts=""
         # --pinned: tracked, so against runtime + record, each batch behind the gate (as launch)
         if [ "$pinned" = 1 ]; then prog+=(--pinned --small --gate --batch 640); untracked=0; fi ;;
  torchcopy) copies=${copies:-640}; long=$((2 * copies)); threads=1
         tpy=${TORCH_PYTHON:-$root/.venv-torch/bin/python}
         [ -x "$tpy" ] || { echo "instr.sh: no torch python at $tpy" >&2; exit 2; }
         simdir=$(dirname "$shim")/../simcuda
         prog=("$tpy" "$here/torch_copy.py"); pre=":$simdir/libcudart.so.13"; per_run=1
         # One OpenBLAS thread: numpy's BLAS thread server spins while idle, 21,000
         # instructions per copy in one run and far fewer in another, none of it pinguard's.
         # And one string-hash seed: CPython's dictionaries probe differently under each
         # random seed, which moved PyTorch's attribute lookups by hundreds per copy.
         simenv=(LD_LIBRARY_PATH="$simdir" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
                 PYTHONHASHSEED=0)
         count_flag="" untracked=1 pgopts=""
         # One run per configuration, counting only the loops (torch_copy.py's callgrind marks).
         marks=1 marks_lib=${BENCH_CGMARKS:-$bin/libbench_cgmarks.so}
         [ -e "$marks_lib" ] || { echo "instr.sh: missing $marks_lib (build bench_cgmarks)" >&2; exit 2; } ;;
  scale) copies=${copies:-8192}; long=$((3 * copies)); threads=1
         prog=("$bin/bench_scale" --regions "$regions" --inflight "$inflight" --gate)
         pre=":$stub"; per_run=1 ;;
  *) echo "instr.sh: --case copy|scale|launch|streams|pylaunch|torchcopy" >&2; exit 2 ;;
esac
# The simulated devices: the default for every case but streams; eight devices' default arenas
# do not fit in valgrind's address space, so those get 64 MiB each.
vgopts=()
[ "$case" != streams ] ||
  { simenv=(SIMCUDA_DEVICES="$devices" SIMCUDA_DEVICE_MB=64); vgopts=(--max-threads=$((streams + 64))); }
devices=${devices:-1}
case $pgmode in audit|enforce) ;; *) echo "instr.sh: --mode audit|enforce" >&2; exit 2 ;; esac
# The completion events pinguard records per access: enforce one each; audit one per
# audit_event_every (--event-every, else the option's default, read from its definition).
if [ "$pgmode" = enforce ]; then
  every=1
elif [ -n "$event_every" ]; then
  every=$event_every
  pgopts=${pgopts:+$pgopts:}audit_event_every=$every
else
  every=$(sed -n 's/^OPT(uint, *audit_event_every, *\([0-9]*\),.*/\1/p' "$root/policy/pg_options.inc")
fi
case $every in ''|*[!0-9]*|0) echo "instr.sh: no event count per access (--event-every N, N >= 1)" >&2; exit 2 ;; esac
case $api in runtime|driver) ;; *) echo "instr.sh: --api runtime|driver" >&2; exit 2 ;; esac
[ "$api" = runtime ] || [ "$case" = copy ] || { echo "instr.sh: --api driver needs --case copy" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/pg-instr.XXXXXX")
trap 'rm -rf "$out"' EXIT
[ -z "$profile" ] || mkdir -p "$profile"

# run_callgrind mode copies: the program under callgrind, into callgrind_file's file; with
# marks (torchcopy), one run counts both lengths: its two dumps become both lengths' files.
callgrind_file() {
  if [ -n "$profile" ]; then echo "$profile/callgrind.$case.t$threads.$1.$2"; else echo "$out/callgrind.$1.$2"; fi
}
run_callgrind() {
  local mode=$1 n=$2 preload=${pre#:} opts="" extra=() file count=("$2") env_marks=()
  local vg_run=("${vgopts[@]}")
  file=$(callgrind_file "$mode" "$n")
  case $mode in
    record) extra=(--record-event) ;;
    audit) preload=$shim$pre; opts=mode=$pgmode${pgopts:+:$pgopts} ;;
  esac
  [ -z "$count_flag" ] || count=("$count_flag" "$n")
  [ "$marks" = 0 ] || { env_marks=(BENCH_CG_MARKS="$marks_lib"); vg_run+=(--instr-atstart=no); }
  if ! env SIMCUDA_LATENCY_US=0 "${simenv[@]}" "${env_marks[@]}" LD_PRELOAD="$preload" \
      PINGUARD_OPTIONS="$opts" "$vg" --tool=callgrind "${vg_run[@]}" \
      --callgrind-out-file="$file" "${prog[@]}" "${count[@]}" "${extra[@]}" \
      >"$out/stdout" 2>"$out/stderr"; then
    echo "instr.sh: $mode run failed (${prog[*]} ${count[*]} ${extra[*]})" >&2
    tail -n 20 "$out/stderr" >&2
    exit 1
  fi
  if [ "$marks" = 1 ]; then
    [ -s "$file.1" ] && [ -s "$file.2" ] ||
      { echo "instr.sh: $mode run left no callgrind dumps ($file.1, $file.2)" >&2; exit 1; }
    mv "$file.1" "$file"
    mv "$file.2" "$(callgrind_file "$mode" "$long")"
  fi
}

# work_ir mode copies: the run's instructions (instr_profile.py work), less the thread hand-off;
# with pinguard also its own allocator calls, and for torchcopy the objects it runs in.
work_ir() {
  local mode=$1 n=$2 file
  file=$(callgrind_file "$mode" "$n")
  python3 "$here/instr_profile.py" work "$file"
  [ "$mode" != audit ] || python3 "$here/instr_profile.py" allocs libpinguard.so "$file" \
    >"$out/allocs.$n"
  [ "$case" != torchcopy ] ||
    python3 "$here/instr_profile.py" work --only "$own_objects" "$file" >"$out/own.$mode.$n"
}
# torchcopy: the objects pinguard's work runs in (its library, the simulated runtime and driver,
# the C library, the loader); the interpreter's and PyTorch's counts move between runs by
# hundreds per copy with the heap's layout alone (instr_profile.py work --only).
own_objects='/libpinguard\.so|/libcuda\.so|/libcudart\.so|/libc\.so|/ld-linux'

# marginal mode: Ir per copy between the short and the long run (one marked run, or two).
marginal() {
  local a b
  run_callgrind "$1" "$copies"
  [ "$marks" = 1 ] || run_callgrind "$1" "$long"
  a=$(work_ir "$1" "$copies")
  b=$(work_ir "$1" "$long")
  awk -v a="$a" -v b="$b" -v n=$(((long - copies) * per_run)) 'BEGIN {printf "%.1f", (b - a) / n}'
}
runtime=$(marginal none)
# An op that adds no completion event is measured against the runtime alone: its record runs
# (two more programs under callgrind) would go unused, so they are skipped and record is the
# runtime's figure.
record=$runtime
[ "$untracked" = 1 ] || record=$(marginal record)
audit=$(marginal audit)
# pinguard records one completion event per `every` accesses of a stream (audit_event_every in
# audit, 1 in enforce): the floor holds that share of the record's marginal cost (a record costs
# the same every time, so 1/every of them costs 1/every as much).
base=$(awk -v n="$runtime" -v r="$record" -v k="$every" 'BEGIN {printf "%.1f", n + (r - n) / k}')
[ "$untracked" = 0 ] || base=$runtime
added=$(awk -v a="$audit" -v r="$base" 'BEGIN {printf "%.1f", a - r}')
geometry=""
[ "$case" != scale ] || geometry="\"regions\":$regions,\"inflight\":$inflight,"
[ "$case" != launch ] || geometry="\"params\":$params,\"pinned\":$pinned,"
[ "$case" != pylaunch ] || geometry="\"params\":$params,\"pinned\":$pinned,"
[ "$nofp" = 0 ] || geometry="\"frame_pointers\":false,"
[ "$rotate" = 1 ] || geometry="$geometry\"rotate\":$rotate,"
[ "$case" != streams ] || geometry="\"streams\":$streams,\"devices\":$devices,\"op\":\"$op\","
geometry="$geometry\"mode\":\"$pgmode\","
printf '{"bench":"instr","case":"%s","api":"%s","threads":%s,%s"copies":[%s,%s],' \
  "$case" "$api" "$threads" "$geometry" "$copies" "$long"
rec_only=$(awk -v r="$record" -v n="$runtime" 'BEGIN {printf "%.1f", r - n}')
allocs=$(awk -v a="$(cat "$out/allocs.$copies")" -v b="$(cat "$out/allocs.$long")" \
  -v n=$(((long - copies) * per_run)) 'BEGIN {printf "%.3f", (b - a) / n}')
printf '"runtime":%s,"runtime_record":%s,"audit":%s,"record":%s,"event_every":%s,' \
  "$runtime" "$record" "$audit" "$rec_only" "$every"
printf '"added_instr_per_copy":%s,' "$added"
ratio=$(awk -v a="$audit" -v r="$base" 'BEGIN {printf "%.3f", a / r}')
case $case in pylaunch|torchcopy) printf '"ratio":%s,' "$ratio" ;; esac
if [ "$case" = torchcopy ]; then
  own=$(awk -v n=$(((long - copies) * per_run)) -v a1="$(cat "$out/own.audit.$copies")" \
    -v a2="$(cat "$out/own.audit.$long")" -v b1="$(cat "$out/own.none.$copies")" \
    -v b2="$(cat "$out/own.none.$long")" 'BEGIN {printf "%.1f", ((a2 - a1) - (b2 - b1)) / n}')
  own_ratio=$(awk -v o="$own" -v r="$base" 'BEGIN {printf "%.3f", (r + o) / r}')
  printf '"added_outside_interpreter":%s,"ratio_outside_interpreter":%s,' "$own" "$own_ratio"
fi
printf '"pinguard_allocs_per_copy":%s}\n' "$allocs"

if [ -n "$profile" ]; then
  f=$profile/callgrind.$case.t$threads
  # The baseline the figure is measured against: runtime + record, or the runtime (also where
  # pinguard records fewer events than accesses: the profile then includes its share of them).
  floor=record
  [ "$untracked" = 0 ] && [ "$every" = 1 ] || floor=none
  python3 "$here/instr_profile.py" profile --copies $(((long - copies) * per_run)) \
    "$f.audit.$copies" "$f.audit.$long" --base "$f.$floor.$copies" "$f.$floor.$long" \
    >"$profile/profile.$case.t$threads.md"
fi
if [ -n "$budget" ]; then
  awk -v a="$allocs" 'BEGIN {exit !(a <= 0.05)}' || {
    echo "instr.sh: pinguard makes $allocs allocator calls per copy ($case, $api," \
      "$threads thread(s)); its per-copy path allocates nothing" >&2
    exit 1
  }
  awk -v a="$added" -v b="$budget" 'BEGIN {exit !(a <= b)}' || {
    echo "instr.sh: added_instr_per_copy $added is above the budget $budget ($case, $api," \
      "$threads thread(s))" >&2
    exit 1
  }
fi
if [ -n "$ratio_budget" ]; then
  # torchcopy: the ratio outside the interpreter and PyTorch, whose own counts move with the
  # heap's layout (the full ratio is printed beside it).
  held=$ratio
  [ "$case" != torchcopy ] || held=$own_ratio
  awk -v a="$held" -v b="$ratio_budget" 'BEGIN {exit !(a <= b)}' || {
    echo "instr.sh: the loop's instructions with pinguard over without, $held, are above" \
      "the budget $ratio_budget ($case)" >&2
    exit 1
  }
fi
