#!/usr/bin/env bash
# Builds pinguard and runs every test: the normal build, then one build under AddressSanitizer
# and UndefinedBehaviorSanitizer together, and one under ThreadSanitizer, of the same suite.
# (PG_SANITIZE=address or =undefined alone also configure, for chasing one finding.)
#   tests/run.sh            all four builds (what CI runs)
#   tests/run.sh --quick    the normal build only
# The torch tier (tests/torch: real PyTorch on simcuda) runs in the normal build only, with the
# Python of .venv-torch (.ci/run installs it; set PG_TORCH_PYTHON for another). Without torch it
# is skipped, except when CI=true: then it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)
# Most tests spend their time waiting on simcuda's device latency (a guarded kvxfer case: 11 s
# of wall time, under 1 s of CPU), so ctest runs twice as many at once as there are cores: on a
# 2-core machine that took the three test runs from 1,327 s to 764 s. PG_TEST_JOBS overrides it.
test_jobs=${PG_TEST_JOBS:-$((2 * jobs))}

run_build() { # name, extra cmake args...
  local dir=$1; shift
  echo "==> $dir: configure, build, test"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; return 1; }
  ctest --test-dir "$dir" --output-on-failure -j"$test_jobs"
}

# Every build runs even when an earlier one failed, so one run shows every failure.
failed=""
run_build build || failed="$failed build"
if [ "${1:-}" != "--quick" ]; then
  run_build build-asan-ubsan -DPG_SANITIZE=address,undefined || failed="$failed build-asan-ubsan"
  run_build build-tsan -DPG_SANITIZE=thread || failed="$failed build-tsan"
fi
if [ -n "$failed" ]; then
  echo "==> FAILED in:$failed"
  exit 1
fi
echo "==> all test builds passed"
