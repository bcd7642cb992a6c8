#!/usr/bin/env bash
# Builds am and runs the demo: Graph500 BFS on a Kronecker graph of SCALE 18 (2^18 vertices,
# 4 Mi edges) on two shared-memory ranks, every search validated, TEPS printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh demo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B build-demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DAM_BUILD_TESTS=OFF -DAM_BUILD_BENCH=OFF \
  -DAM_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-demo -j "$(nproc)" --target am-graph500
AM_TRANSPORT=shm AM_RANKS=2 build-demo/apps/graph/am-graph500 \
  --scale 18 --edgefactor 16 --kernel bfs --roots 64 --validate --quiet
