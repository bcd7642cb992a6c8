#!/usr/bin/env bash
# Builds am and runs the demo: ping-pong between two shm ranks pinned to two cores, with the
# one-way latency printed beside MPI's (Open MPI, same machine, same run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh demo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B build-demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DAM_BUILD_TESTS=OFF >/dev/null
cmake --build build-demo -j "$(nproc)" --target am_pingpong mpi_baseline hello amrun
build-demo/bench/am_pingpong --demo
