#!/usr/bin/env bash
# Intent: docs/GUARD.md's list of checked calls is exactly what libpinguard.so interposes: every
# libc I/O name the shim exports is listed under "Checked", and every libc function listed there
# is exported. Usage: check_syscall_docs.sh libpinguard.so docs/GUARD.md
#
# TEST: syscall_docs BARE ARGS $<TARGET_FILE:pinguard> ${PROJECT_SOURCE_DIR}/docs/GUARD.md
set -u
lib=$1 doc=$2
libc=$(ldd "$lib" | awk '/libc\.so/ {print $3}')
[ -r "$libc" ] || { echo "FAIL: cannot find the libc $lib uses"; exit 1; }
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' |
           grep -Ev '^(cuda|__cuda|cu[A-Z]|pinguard_|_init$|_fini$|sigaction$|signal$|dlsym$)' | sort -u)
# The "Checked" lists: from the section's first **Checked** up to **Safe without an interposer**.
listed=$(sed -n '/^## System calls/,/^## /p' "$doc" |
         sed -n '/^\*\*Checked\*\*/,/^\*\*Safe without/p' | sed '$d' | grep -o '`[A-Za-z0-9_]*`' | tr -d '`' | sort -u)
libc_names=$(nm -D --defined-only "$libc" | awk '{print $3}' | sed 's/@.*//' | sort -u)
fail=0
[ -n "$listed" ] || { echo "FAIL: no Checked list found in $doc"; exit 1; }
missing=$(comm -23 <(echo "$exported") <(echo "$listed"))
if [ -n "$missing" ]; then
  echo "FAIL: interposed but not listed as checked in $doc:"; echo "$missing"; fail=1
fi
claimed=$(comm -12 <(echo "$listed") <(echo "$libc_names"))
unbacked=$(comm -23 <(echo "$claimed") <(echo "$exported"))
if [ -n "$unbacked" ]; then
  echo "FAIL: listed as checked in $doc but not interposed:"; echo "$unbacked"; fail=1
fi
[ $fail -eq 0 ] && echo "ok: $(echo "$exported" | wc -l) checked calls, all listed in $doc"
exit $fail
