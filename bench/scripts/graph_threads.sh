#!/usr/bin/env bash
# Graph500 BFS and SSSP with several handler threads per rank (AM++ §4.3.1, Figs. 6-7): one fixed
# problem run over ranks × threads combinations on the shm transport, the configurations
# alternating round by round so that drift in the machine's load spreads over all of them. With
# the default configurations on a 2-core machine, 1x2 and 2x1 use both cores, 2x2 and 4x1
# oversubscribe them. Each run is one am-graph500 invocation for all kernels (one graph).
# Prints am-graph500's JSON lines per run (they carry "ranks" and "threads") with "config":"RxT"
# and "round" added, and appends them to --out when given. Each round begins with the cost of a
# cache-line transfer between the two cores (am_pingpong's "hop" line, with "round" added): the
# VM's vCPUs move, and that cost, which a rank of several threads pays where its threads share
# data, changed 3-5x within an hour on this machine.
#   bench/scripts/graph_threads.sh BUILD_DIR [--scale S] [--roots R] [--rounds N]
#                                  [--kernels bfs,sssp] [--configs "1x1 1x2 2x1 2x2 4x1"]
#                                  [--out FILE]
# Run it alone: flock -x /tmp/am-cpu.lock bench/scripts/graph_threads.sh build --out runs.jsonl
# Then: /usr/bin/python3 bench/scripts/plot_graph_threads.py runs.jsonl --out docs/graph_figures
set -euo pipefail
usage() {
  echo "usage: graph_threads.sh BUILD_DIR [--scale S] [--roots R] [--rounds N]" \
    "[--kernels bfs,sssp] [--configs \"RxT ...\"] [--out FILE]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
scale=18 roots=16 rounds=3 kernels=bfs,sssp configs="1x1 1x2 2x1 2x2 4x1" out=
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=${2:?}; shift 2 ;;
    --roots) roots=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --kernels) kernels=${2:?}; shift 2 ;;
    --configs) configs=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    *) usage ;;
  esac
done
graph500=$(cd "$build" && pwd)/apps/graph/am-graph500
pingpong=$(cd "$build" && pwd)/bench/am_pingpong
[ -x "$graph500" ] || { echo "graph_threads.sh: no $graph500" >&2; exit 2; }
[ -x "$pingpong" ] || { echo "graph_threads.sh: no $pingpong" >&2; exit 2; }

emit() {
  echo "$1"
  [ -z "$out" ] || echo "$1" >>"$out"
}

for ((round = 1; round <= rounds; round++)); do
  hop=$("$pingpong" --transport shm --ranks 2 --sizes 8 --ops short --reps 3 --json \
    2>/tmp/graph_threads_pingpong.$$ | grep '"op":"hop"' | head -n 1) || {
    cat /tmp/graph_threads_pingpong.$$ >&2
    echo "graph_threads.sh: round $round: am_pingpong gave no hop line" >&2
    exit 1
  }
  rm -f /tmp/graph_threads_pingpong.$$
  emit "{\"round\":$round,${hop#\{}"
  for config in $configs; do
    ranks=${config%x*} threads=${config#*x}
    lines=$(AM_TRANSPORT=shm AM_RANKS=$ranks "$graph500" --scale "$scale" --kernel "$kernels" \
      --roots "$roots" --threads "$threads" --json --quiet | grep '^{"bench":"graph500"') || {
      echo "graph_threads.sh: round $round, $config: am-graph500 failed" >&2
      exit 1
    }
    while IFS= read -r line; do
      emit "{\"config\":\"$config\",\"round\":$round,${line#\{}"
    done <<<"$lines"
  done
done
