#!/usr/bin/env bash
# The quick start leaves a working tool: tools/quickstart.sh builds the library, the launcher
# (bin/pinguard) and simcuda as well as the demo, checks that the launcher runs a program on
# simcuda, and ends by naming the next two commands. cmake and dpkg-query are stubs on PATH (the
# real build is what .ci/run checks on a fresh machine): the stub cmake logs its arguments and,
# for a build of the launcher's target, leaves a stub bin/pinguard that logs how it was run.
#   quickstart_tool.sh QUICKSTART
set -u
qs=${1:?usage: quickstart_tool.sh QUICKSTART}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
cat >"$tmp/bin/dpkg-query" <<'STUB'
#!/bin/sh
printf 'install ok installed'
STUB
cat >"$tmp/bin/cmake" <<'STUB'
#!/bin/sh
echo "cmake $*" >>"$LOG"
[ "$1" = "--build" ] || exit 0
case " $* " in
  *" pinguard_tools "*)
    mkdir -p "$2/bin"
    printf '#!/bin/sh\necho "pinguard $*" >>"%s"\n' "$LOG" >"$2/bin/pinguard"
    chmod +x "$2/bin/pinguard" ;;
esac
STUB
chmod +x "$tmp/bin/"*
fail() { echo "FAIL: $*"; echo "--- output"; cat "$tmp/out"; echo "--- log"; cat "$tmp/log"; exit 1; }
touch "$tmp/log"
env PATH="$tmp/bin:$PATH" LOG="$tmp/log" "$qs" --build-dir "$tmp/build" >"$tmp/out" 2>&1 ||
  fail "quickstart.sh exited with status $?"
grep -q "^cmake --build $tmp/build .*--target .*\bpinguard_tools\b" "$tmp/log" ||
  fail "the launcher's target (pinguard_tools) was not built"
for t in pinguard simcuda simcuda_driver demo; do
  grep -q "^cmake --build $tmp/build .*--target\( [a-z_]*\)* $t\b" "$tmp/log" ||
    fail "target $t was not built"
done
grep -qx "pinguard run --simcuda -- true" "$tmp/log" ||
  fail "the quick start did not check that bin/pinguard runs a program on simcuda"
tail -n 2 "$tmp/out" | grep -q "bin/pinguard run --simcuda -- python your_test.py" &&
  tail -n 1 "$tmp/out" | grep -q "bin/pinguard run --mode enforce -- \.\.\." ||
  fail "the quick start does not end with the next two commands"
echo "ok: the quick start builds the launcher, library and simcuda, checks the launcher, names the next commands"
