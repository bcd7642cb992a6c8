#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and builds + runs tests/install against it,
# once through find_package(am) and once through pkg-config.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S tests/install -B "$prefix/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
AM_RANKS=2 "$prefix/consumer/consumer"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
  g++ tests/install/consumer.cpp $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs am) \
  -o "$prefix/consumer_pc"
AM_RANKS=2 AM_TRANSPORT=shm "$prefix/consumer_pc"
# Built with MPI, am installs the AML API too: a C AML program builds against it and runs.
if [ -d "$build/compat/aml" ]; then  # AML was built: it must be installed
  cmake -S tests/install/aml -B "$prefix/aml_consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$prefix/aml_consumer" >/dev/null
  mpirun -n 2 --oversubscribe "$prefix/aml_consumer/aml_consumer"
  echo "install test: find_package(am) consumers of am::am and am::aml, pkg-config consumer passed"
else
  echo "install test: find_package(am) and pkg-config consumers passed (am without MPI: no AML)"
fi
