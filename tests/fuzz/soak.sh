#!/usr/bin/env bash
# soak.sh SECONDS [pgfuzz flags...]: runs pgfuzz for as long as asked, in every op kind (nothing
# left out unless the flags say so), cycling through both modes and a few program shapes, from a
# fresh random base seed each round; prints each failing seed with its shrunk op list.
#   tests/fuzz/soak.sh 600                    # ten minutes
#   PGFUZZ=build-asan/tests/fuzz/pgfuzz tests/fuzz/soak.sh 3600 --no-hostfn
# Needs PG_PRELOAD (libpinguard.so, after a sanitizer runtime if pgfuzz is sanitized); by default
# it uses build/lib/libpinguard.so next to build/tests/fuzz/pgfuzz.
set -u
secs=${1:?usage: soak.sh SECONDS [pgfuzz flags...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
pgfuzz=${PGFUZZ:-$root/build/tests/fuzz/pgfuzz}
export PG_PRELOAD=${PG_PRELOAD:-$root/build/lib/libpinguard.so}
out=${SOAK_OUT:-$(mktemp -d /tmp/pgfuzz-soak.XXXXXX)}
[ -x "$pgfuzz" ] || { echo "soak.sh: $pgfuzz not built" >&2; exit 2; }
shapes=("--threads 3 --streams 3 --ops 80"
        "--threads 4 --streams 6 --events 6 --slots 6 --ops 250"
        "--threads 2 --streams 2 --events 2 --slots 2 --ops 40"
        "--threads 4 --streams 4 --ops 400 --latency 20-2000")
end=$((SECONDS + secs))
round=0 failed=0
while [ $SECONDS -lt $end ]; do
  left=$((end - SECONDS))
  slice=$((left < 60 ? left : 60))
  mode=$([ $((round % 2)) -eq 0 ] && echo audit || echo enforce)
  shape=${shapes[$(((round / 2) % ${#shapes[@]}))]}
  base=$(( (RANDOM << 15 | RANDOM) * 1000 + 1 ))
  echo "soak: round $round: --mode $mode $shape --seeds from $base for ${slice}s"
  # shellcheck disable=SC2086
  "$pgfuzz" --mode "$mode" $shape --seeds "$base-$((base + 100000000))" --time "$slice" \
            --out "$out" "$@" || failed=$((failed + 1))
  round=$((round + 1))
done
echo "soak: $round rounds, $failed with failures; op files of failures in $out"
[ "$failed" -eq 0 ]
