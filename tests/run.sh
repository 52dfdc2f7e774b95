#!/usr/bin/env bash
# Builds pinguard and runs every test: the normal build, then one build under AddressSanitizer
# and UndefinedBehaviorSanitizer together, and one under ThreadSanitizer, of the same suite.
# (PG_SANITIZE=address or =undefined alone also configure, for chasing one finding.)
#   tests/run.sh            all three builds (what CI runs)
#   tests/run.sh --quick    the normal build only
# The torch tier (tests/torch: real PyTorch on simcuda) runs in the normal build only, with the
# Python of .venv-torch (.ci/run installs it; set PG_TORCH_PYTHON for another). Without torch it
# is skipped, except when CI=true: then it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)
# Most tests spend their time waiting on simcuda's device latency (a guarded kvxfer case: 11 s
# of wall time, under 1 s of CPU; the ThreadSanitizer build's 287 e2e.driver cases: 57 s of wall
# time and 27 s of CPU at 8 at once), so ctest runs three times as many at once as there are
# cores. The fuzzer's runs, which use two processes each, say so (PROCESSORS 2), and the longest
# tests start first (COST). PG_TEST_JOBS overrides it.
test_jobs=${PG_TEST_JOBS:-$((3 * jobs))}

# The sanitizer builds are optimized as the sanitizers' own documentation advises (-O1), with line
# tables only (-g1: file:line in every report): half the compile time of -O2 -g.
san_flags=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")

configure_and_build() { # dir, extra cmake args...: quiet, its logs beside the build directory
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; return 1; }
}

run_tests() { # dir
  echo "==> $1: test (at ${SECONDS} s)"
  ctest --test-dir "$1" --output-on-failure -j"$test_jobs"
}

# Every build runs even when an earlier one failed, so one run shows every failure.
failed=""
rm -f build-asan-ubsan.status build-tsan.status sanitizer-builds.log
echo "==> build: configure, build"
if configure_and_build build; then
  if [ "${1:-}" != "--quick" ]; then
    # The two sanitizer builds compile in the background, at a lower priority, while the normal
    # build's tests run: those tests mostly wait on simcuda's device latency, and the compilers
    # take the idle CPU. Their status is kept in a file each; their logs say the rest.
    (
      nice -n 10 bash -c "$(declare -f configure_and_build); $(declare -p san_flags); jobs=$jobs
        configure_and_build build-asan-ubsan -DPG_SANITIZE=address,undefined \"\${san_flags[@]}\"
        echo \$? >build-asan-ubsan.status
        configure_and_build build-tsan -DPG_SANITIZE=thread \"\${san_flags[@]}\"
        echo \$? >build-tsan.status"
    ) >sanitizer-builds.log 2>&1 &
    builder=$!
  fi
  run_tests build || failed="$failed build"
else
  failed="$failed build"
fi
if [ "${1:-}" != "--quick" ]; then
  if [ -z "${builder:-}" ]; then # the normal build failed: build the others now
    configure_and_build build-asan-ubsan -DPG_SANITIZE=address,undefined "${san_flags[@]}"
    echo $? >build-asan-ubsan.status
    configure_and_build build-tsan -DPG_SANITIZE=thread "${san_flags[@]}"
    echo $? >build-tsan.status
  fi
  # The two sanitizer suites run at the same time, each with half the jobs: many of their tests
  # wait on device latency, so together they take less than one after the other. Each one's
  # output goes to its log, printed whole when it ends.
  sanitizer_suite() { # dir
    local dir=$1
    # Wait for this build's status (the background builder writes it when the build ends).
    while [ -n "${builder:-}" ] && [ ! -s "$dir.status" ] && kill -0 "$builder" 2>/dev/null; do
      sleep 2
    done
    echo "==> $dir: configure, build (in the background: sanitizer-builds.log)"
    if [ "$(cat "$dir.status" 2>/dev/null)" = "0" ]; then
      test_jobs=$(((test_jobs + 1) / 2)) run_tests "$dir"
    else
      cat sanitizer-builds.log
      return 1
    fi
  }
  pids=()
  for dir in build-asan-ubsan build-tsan; do
    sanitizer_suite "$dir" >"$dir.test.log" 2>&1 &
    pids+=($!)
  done
  i=0
  for dir in build-asan-ubsan build-tsan; do
    wait "${pids[$i]}" || failed="$failed $dir"
    cat "$dir.test.log"
    i=$((i + 1))
  done
  [ -z "${builder:-}" ] || wait "$builder" || true
fi
echo "==> done at ${SECONDS} s"
if [ -n "$failed" ]; then
  echo "==> FAILED in:$failed"
  exit 1
fi
echo "==> all test builds passed"
