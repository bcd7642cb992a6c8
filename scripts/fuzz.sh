#!/usr/bin/env bash
# Fuzzes every target in fuzz/ with libFuzzer for a while (see fuzz/README.md).
#   scripts/fuzz.sh [seconds per target (60)] [build dir (build-fuzz)]
# Builds each target with clang++-14 (-fsanitize=fuzzer,address,undefined), seeds it from a
# scratch copy of fuzz/corpus/<target> and fuzz/regressions/<target> in the build dir (the
# repository is left alone unless something is found), and runs it for the given time. A crash
# (or a broken invariant, a sanitizer report, a timeout or running out of memory) is copied
# into fuzz/regressions/<target>/, where the replay test am.fuzz.<target>.replay picks it up;
# the script then exits 1 naming the files. Without clang++-14 it says SKIPPED and exits 0
# (1 with AM_REQUIRE_ALL_TESTS=1, as in CI).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
build=${2:-build-fuzz}
cxx=${AM_FUZZ_CXX:-clang++-14}
targets="incoming mpi_eager"

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "SKIPPED: $cxx not found (scripts/deps.sh ci installs clang-14 and libclang-rt-14-dev)"
  # CI (AM_REQUIRE_ALL_TESTS=1) could have installed it: a skip there is a failure.
  [ "${AM_REQUIRE_ALL_TESTS:-0}" = 1 ] && exit 1
  exit 0
fi
case "$seconds" in '' | *[!0-9]*) echo "usage: $0 [seconds] [build-dir]" >&2; exit 2 ;; esac

mkdir -p "$build"
found=""
for t in $targets; do
  bin="$build/${t}_fuzz"
  echo "== fuzz $t: building $bin"
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -DAM_INTERNAL_CORE=1 -DAM_INTERNAL_TRANSPORT=1 -Iinclude -Isrc \
    "fuzz/${t}_fuzz.cpp" -o "$bin"

  corpus="$build/corpus/$t"       # grows from run to run; seeds copied in every time
  artifacts="$build/artifacts/$t"
  rm -rf "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  find "fuzz/corpus/$t" "fuzz/regressions/$t" -maxdepth 1 -type f ! -name .gitkeep \
    -exec cp -f {} "$corpus/" \;

  echo "== fuzz $t: ${seconds} s"
  log="$build/$t.log"
  set +e
  # -max_len: above the mpi transport's receive slot (8448 bytes), so over-long inputs occur.
  "$bin" -max_total_time="$seconds" -max_len=9000 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  echo "   $t: ${runs:-?} executions, exit status $rc (log: $log)"
  for a in "$artifacts"/*; do
    [ -f "$a" ] || continue
    dest="fuzz/regressions/$t/$(basename "$a")"
    cp -f "$a" "$dest"
    found="$found $dest"
  done
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log" >&2
    [ -n "$found" ] || found="$found (no input saved; see $log)"
  fi
done

if [ -n "$found" ]; then
  echo "FUZZ FAILED: crash inputs:$found" >&2
  echo "replay one with: $build/<target>_fuzz <file>; it stays as a regression test" >&2
  exit 1
fi
echo "fuzz: no crash in ${seconds} s per target"
