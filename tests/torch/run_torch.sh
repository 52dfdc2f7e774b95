#!/bin/sh
# run_torch.sh PYTHON ARGS...: runs PYTHON ARGS (pytest or a script) from tests/torch when PYTHON
# has torch and pytest. Without them it exits 77 (CTest: skipped), except when CI=true, where that
# is a failure. Every other status is the command's own, so pytest's "no tests collected" (5)
# fails.
py=$1
shift
cd "$(dirname "$0")" || exit 1
# Checked without the caller's preload: a torch that fails to import on simcuda is a failure of
# the command, never a skip.
if ! [ -x "$py" ] || ! env -u LD_PRELOAD -u LD_LIBRARY_PATH "$py" -c 'import torch, pytest' \
  >/dev/null 2>&1; then
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "tests/torch: $py has no torch/pytest, and CI is set: failing (.ci/run installs them)" >&2
    exit 1
  fi
  echo "tests/torch: skipped: $py has no torch/pytest (.ci/run installs them into .venv-torch)" >&2
  exit 77
fi
exec "$py" "$@"
