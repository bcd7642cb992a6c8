#!/bin/sh
# CI's regression check of the short-AM hot path: instructions per round trip under callgrind
# (deterministic for a given compiler and build type) must not exceed LIMIT.
#   bench/scripts/check_instructions.sh BUILD_DIR LIMIT
# Exits 77 (CTest: skipped, shown in the summary) when valgrind is not installed.
set -eu
build=$1
limit=$2
if ! command -v valgrind >/dev/null; then
    echo "check_instructions: SKIPPED: valgrind is not installed (apt-get install valgrind)"
    exit 77
fi
here=$(dirname "$0")
out=$("$here/count_instructions.sh" "$build" 20000)
echo "$out"
count=$(echo "$out" | awk '/instructions per short-AM round trip:/ { print $NF }')
[ -n "$count" ] || { echo "check_instructions: no count in the output" >&2; exit 1; }
if awk -v c="$count" -v l="$limit" 'BEGIN { exit !(c > l) }'; then
    echo "check_instructions: FAILED: $count instructions per short-AM round trip exceed the" \
         "limit of $limit (bench/CMakeLists.txt, AM_INSTRUCTION_LIMIT; docs/performance.md)" >&2
    exit 1
fi
echo "check_instructions: $count <= $limit"
