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
  # Started by the launcher of the MPI am was built with (-DAM_MPI): Open MPI or MPICH.
  mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
  flags=()
  if "$mpiexec" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then flags=(--oversubscribe); fi
  "$mpiexec" -n 2 "${flags[@]}" "$prefix/aml_consumer/aml_consumer"
  # And the MPIX_AM C interface on MPI windows (window active messages).
  cmake -S tests/install/mpix -B "$prefix/mpix_consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$prefix/mpix_consumer" >/dev/null
  "$mpiexec" -n 2 "${flags[@]}" "$prefix/mpix_consumer/mpix_consumer"
  echo "install test: find_package(am) consumers of am::am, am::aml and am::mpix_am," \
       "pkg-config consumer passed"
else
  echo "install test: find_package(am) and pkg-config consumers passed (am without MPI: no AML)"
fi
