#!/bin/sh
# Instructions per short-AM round trip, counted by valgrind's callgrind (docs/performance.md).
#
#   bench/scripts/count_instructions.sh [BUILD_DIR] [ITERS] [am_roundtrip_count options...]
#
# Default: one rank on the threads transport pinging itself, so every iteration is exactly
# request → dispatch → handler → reply → dispatch → handler (send + dispatch on both sides)
# and the count is deterministic. `--transport shm` runs the same loop in a forked shm rank.
# Only the instructions executed inside am_bench_roundtrip_loop() are collected
# (--toggle-collect), then divided by ITERS. The callgrind files are kept in a temporary
# directory for callgrind_annotate; its path is printed.
set -eu
build=${1:-build}
iters=${2:-100000}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
exe="$build/bench/am_roundtrip_count"
if [ ! -x "$exe" ]; then
    echo "count_instructions: $exe not found (build first: ninja -C $build am_roundtrip_count)" >&2
    exit 1
fi
command -v valgrind >/dev/null || { echo "count_instructions: valgrind not installed" >&2; exit 1; }
out=$(mktemp -d /tmp/am-callgrind.XXXXXX)
valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$out/callgrind.out.%p" \
    --toggle-collect='am_bench_roundtrip_loop*' \
    "$exe" --iters "$iters" "$@" >"$out/stdout" 2>"$out/valgrind.log" || {
    echo "count_instructions: valgrind run failed, see $out/valgrind.log" >&2
    exit 1
}
total=0
profile=""
for f in "$out"/callgrind.out.*; do
    ir=$(awk '/^totals:/ { print $2 }' "$f")
    if [ "${ir:-0}" -gt 0 ]; then
        total=$((total + ir))
        profile="$f"
    fi
done
echo "collected instructions:   $total (in am_bench_roundtrip_loop, $iters round trips)"
awk -v t="$total" -v n="$iters" \
    'BEGIN { printf "instructions per short-AM round trip: %.1f\n", t / n }'
echo "profile: $profile"
echo "  breakdown: callgrind_annotate $profile | head -40"
echo "  inclusive: callgrind_annotate --inclusive=yes $profile | head -40"
