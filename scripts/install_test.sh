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
echo "install test: find_package(am) and pkg-config consumers passed"
