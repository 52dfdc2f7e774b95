#!/usr/bin/env bash
# The fresh-machine path of tools/quickstart.sh, without uninstalling anything here: dpkg-query,
# apt-get and id are stubs on PATH. A machine missing uthash-dev (today's "uthash.h not found")
# gets exactly that package installed when root; a non-root user is told the apt-get command and
# nothing is installed; a machine with everything installs nothing.
# Also: the README's first command is this script.
#   quickstart_deps.sh QUICKSTART README
set -u
qs=${1:?usage: quickstart_deps.sh QUICKSTART README}
readme=${2:?usage: quickstart_deps.sh QUICKSTART README}
first=$(awk '/^```sh$/ { getline; print; exit }' "$readme")
[ "$first" = "tools/quickstart.sh" ] || { echo "FAIL: the README's first command is '$first'"; exit 1; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
cat >"$tmp/bin/dpkg-query" <<'STUB'
#!/bin/sh
# Reports every package installed except those listed in $MISSING.
for p in $MISSING; do [ "$p" = "$3" ] && { echo "dpkg-query: no packages found matching $3" >&2; exit 1; }; done
printf 'install ok installed'
STUB
cat >"$tmp/bin/apt-get" <<'STUB'
#!/bin/sh
echo "apt-get $*" >>"$APT_LOG"
STUB
cat >"$tmp/bin/id" <<'STUB'
#!/bin/sh
echo "$FAKE_UID"
STUB
chmod +x "$tmp/bin/"*
fail() { echo "FAIL: $*"; cat "$tmp/out" "$tmp/apt.log" 2>/dev/null; exit 1; }
run() { # missing uid
  rm -f "$tmp/apt.log"; touch "$tmp/apt.log"
  env PATH="$tmp/bin:$PATH" MISSING="$1" FAKE_UID="$2" APT_LOG="$tmp/apt.log" \
    "$qs" --deps-only >"$tmp/out" 2>&1
}

run "uthash-dev" 0 || fail "root with uthash-dev missing: status $?"
grep -qx "apt-get update -qq" "$tmp/apt.log" || fail "no apt-get update"
grep -qx "apt-get install -y -qq --no-install-recommends uthash-dev" "$tmp/apt.log" ||
  fail "uthash-dev, and only it, is not installed"

run "uthash-dev libcriterion-dev" 1000 && fail "a non-root user with packages missing succeeded"
[ ! -s "$tmp/apt.log" ] || fail "apt-get ran for a non-root user"
grep -q "sudo apt-get install libcriterion-dev uthash-dev" "$tmp/out" ||
  fail "the non-root user is not told the command"

run "" 0 || fail "nothing missing: status $?"
[ ! -s "$tmp/apt.log" ] || fail "apt-get ran with nothing missing"
echo "ok: installs what is missing as root, names it otherwise, installs nothing when complete"
