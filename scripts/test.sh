#!/usr/bin/env bash
# Builds am with its tests and runs all of them (the README's test command).
#   scripts/test.sh [build-dir]        extra CMake options via AM_CMAKE_ARGS
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
scripts/deps.sh test
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${AM_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)"
# The installed package works for a consumer: find_package(am) and pkg-config. (Not for
# sanitizer builds: their library needs the sanitizer runtime in the consumer too.)
case "${AM_CMAKE_ARGS:-}" in
  *AM_SANITIZE=?*) echo "install test: not run for a sanitizer build" ;;
  *) scripts/install_test.sh "$build" ;;
esac
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --timeout 600 ${AM_CTEST_ARGS:-}
