#!/usr/bin/env bash
# Every C++ name libstdc++ exports that pinguard's demangler accepts must read as c++filt reads
# it (a template function's return type left out), and at least 90% of them must be accepted.
#   demangle_vs_cxxfilt.sh DEMANGLE_FILTER
set -u
filter=${1:?usage: demangle_vs_cxxfilt.sh DEMANGLE_FILTER}
lib=$(ldconfig -p | sed -n 's/.*libstdc++.so.6 (libc6,x86-64) => //p' | head -n1)
command -v c++filt >/dev/null && command -v nm >/dev/null && [ -n "$lib" ] ||
  { echo "SKIP: needs nm, c++filt and libstdc++.so.6"; exit 77; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
# Functions only: typeinfo, vtables, VTTs and guard variables (_ZT[ISVT], _ZG) are no frames.
nm -D --without-symbol-versions "$lib" | awk '$3 ~ /^_Z/ && $3 !~ /^_Z(T[ISVT]|G)/ { print $3 }' |
  sort -u >"$tmp/names"
"$filter" <"$tmp/names" >"$tmp/ours"
c++filt <"$tmp/names" >"$tmp/theirs"
total=$(wc -l <"$tmp/names")
paste -d '\t' "$tmp/names" "$tmp/ours" "$tmp/theirs" | awk -F '\t' '
  $2 == $1 { refused++; next }
  { n = length($2); if (substr($3, length($3) - n + 1) != $2 ||
                        (length($3) > n && substr($3, length($3) - n, 1) != " ")) {
      print "MISMATCH " $1 "\n  ours:     " $2 "\n  c++filt:  " $3; bad++ } }
  END { printf "refused %d\n", refused; exit bad > 0 }' >"$tmp/report"
status=$?
cat "$tmp/report" | head -n 40
refused=$(sed -n 's/^refused //p' "$tmp/report")
[ "$status" -eq 0 ] || { echo "FAIL: names read differently from c++filt"; exit 1; }
[ $((refused * 10)) -le "$total" ] || { echo "FAIL: $refused of $total refused"; exit 1; }
echo "ok: $((total - refused)) of $total names read as c++filt reads them"
