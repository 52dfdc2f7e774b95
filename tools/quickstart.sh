#!/usr/bin/env bash
# quickstart.sh: the README's first command. On Debian (or Ubuntu), installs the build's missing
# packages when run as root (else names the apt-get command and stops), builds pinguard (the
# library, the `pinguard` launcher in <build>/bin and simcuda) and the demo, runs the demo's bug
# matrix on the simulated CUDA runtime (one device, then two), prints one full report so a
# newcomer sees what pinguard says, checks that <build>/bin/pinguard works, and names the next
# two commands. The CUDA Toolkit (headers and libcudart) must be installed.
#   tools/quickstart.sh [--deps-only] [--build-dir DIR]
# --deps-only: check and install the packages, then stop (the tests use it with stubbed tools).
set -euo pipefail
cd "$(dirname "$0")/.."

deps_only=0 build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --deps-only) deps_only=1; shift ;;
    --build-dir) build=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "quickstart: unknown argument $1" >&2; exit 2 ;;
  esac
done

# The Debian packages the build needs (the same list as .ci/run).
packages=(cmake make gcc g++ libcriterion-dev uthash-dev python3 binutils pkg-config)

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$pkg")
  done
else
  echo "quickstart: not a Debian system (no dpkg-query): install the equivalents of" \
       "${packages[*]} yourself; trying the build as is" >&2
fi

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "quickstart: missing packages: ${missing[*]}" >&2
    echo "quickstart: run this as root, or first: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "quickstart: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$deps_only" -eq 0 ] || { echo "quickstart: packages ready"; exit 0; }

export PATH="$PATH:/usr/local/cuda/bin"
if ! command -v nvcc >/dev/null 2>&1 && [ ! -f /usr/local/cuda/include/cuda_runtime_api.h ] &&
   [ ! -f /usr/include/cuda_runtime_api.h ]; then
  echo "quickstart: the CUDA Toolkit is missing (its headers and libcudart build the tests;" \
       "no GPU is needed): install it from NVIDIA, then run this again" >&2
  exit 1
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The library, the launcher (bin/pinguard, lib/python) and simcuda (runtime and driver) first,
# so the tool every later README section uses exists even if the demo's matrix fails.
cmake --build "$build" -j"$jobs" --target pinguard pinguard_tools simcuda simcuda_driver
cmake --build "$build" -j"$jobs" --target demo

# One full report: the store bug (a serializer reads a pinned buffer a kernel is still writing),
# caught by guard pages in audit mode.
echo
echo "One of those reports in full (kvxfer --bug=store-no-sync under pinguard, audit mode):"
echo
err=$(mktemp)
trap 'rm -f "$err"' EXIT
LD_PRELOAD="$PWD/$build/lib/libpinguard.so" PINGUARD_OPTIONS="mode=audit:guard=1" \
  "$build/examples/kvxfer/kvxfer" --bug=store-no-sync --transport=serialize --xfer=kernel \
  >/dev/null 2>"$err" || true
# From the first report's header to its SUMMARY line.
awk '/pinguard: ERROR: / { on = 1 } on { print } on && /^SUMMARY: / { exit }' "$err"

# The tool the rest of the README uses: it must find its library and simcuda from where it is.
echo
if ! "$build/bin/pinguard" run --simcuda -- true; then
  echo "quickstart: $build/bin/pinguard does not work (see the error above)" >&2
  exit 1
fi
echo "The launcher is $build/bin/pinguard. Next, test your own code on simcuda (no GPU), then"
echo "run it in enforce mode:"
echo "  $build/bin/pinguard run --simcuda -- python your_test.py"
echo "  $build/bin/pinguard run --mode enforce -- ..."
