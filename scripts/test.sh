#!/usr/bin/env bash
# Builds am with its tests and runs all of them (the README's test command).
#   scripts/test.sh [--configure-only] [build-dir]   extra CMake options via AM_CMAKE_ARGS,
#                                                   extra ctest options via AM_CTEST_ARGS,
#                                                   only some targets via AM_BUILD_TARGETS
# With AM_REQUIRE_ALL_TESTS=1 (CI) a test that is not registered for want of a package fails
# the configure, and a test that reports itself skipped fails the run (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
configure_only=0
if [ "${1:-}" = "--configure-only" ]; then configure_only=1; shift; fi
build="${1:-build}"
scripts/deps.sh test
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${AM_CMAKE_ARGS:-} >/dev/null
if [ $configure_only = 1 ]; then echo "test.sh: $build configured"; exit 0; fi
# AM_BUILD_TARGETS: build only these (CI's MPICH tier, scripts/ctest_targets.py), else all.
cmake --build "$build" -j "$(nproc)" ${AM_BUILD_TARGETS:+--target $AM_BUILD_TARGETS}
# The installed package works for a consumer: find_package(am) and pkg-config. (Not for
# sanitizer builds: their library needs the sanitizer runtime in the consumer too.)
case "${AM_CMAKE_ARGS:-}" in
  *AM_SANITIZE=?*) echo "install test: not run for a sanitizer build" ;;
  *) scripts/install_test.sh "$build" ;;
esac
log="$build/ctest-summary.log"
set -f  # AM_CTEST_ARGS may hold regular expressions: split into words, never globbed
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --timeout 600 ${AM_CTEST_ARGS:-} \
  | tee "$log"
if [ "${AM_REQUIRE_ALL_TESTS:-0}" = 1 ] && grep -E '\((Skipped|Disabled)\)$' "$log"; then
  echo "test.sh: FAILED: the tests above skipped; with AM_REQUIRE_ALL_TESTS=1 (CI) a skip" \
       "is a failure: install what they need (scripts/deps.sh test) or run them as root" >&2
  exit 1
fi
