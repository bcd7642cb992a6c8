#!/usr/bin/env bash
# Graph500 BFS with several handler threads per rank (AM++ §4.3.1, Figs. 6-7): one fixed problem
# run over ranks × threads combinations on the shm transport, the configurations alternating
# round by round so that drift in the machine's load spreads over all of them. With the default
# configurations on a 2-core machine, 1x2 and 2x1 use both cores, 2x2 and 4x1 oversubscribe them.
# Prints am-graph500's JSON line per run (it carries "ranks" and "threads") with "config":"RxT"
# and "round" added, and appends them to --out when given.
#   bench/scripts/graph_threads.sh BUILD_DIR [--scale S] [--roots R] [--rounds N]
#                                  [--configs "1x1 1x2 2x1 2x2 4x1"] [--out FILE]
# Run it alone: flock -x /tmp/am-cpu.lock bench/scripts/graph_threads.sh build --out runs.jsonl
# Then: /usr/bin/python3 bench/scripts/plot_graph_threads.py runs.jsonl --out docs/graph_figures
set -euo pipefail
usage() {
  echo "usage: graph_threads.sh BUILD_DIR [--scale S] [--roots R] [--rounds N]" \
    "[--configs \"RxT ...\"] [--out FILE]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
scale=18 roots=16 rounds=3 configs="1x1 1x2 2x1 2x2 4x1" out=
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=${2:?}; shift 2 ;;
    --roots) roots=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --configs) configs=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    *) usage ;;
  esac
done
graph500=$(cd "$build" && pwd)/apps/graph/am-graph500
[ -x "$graph500" ] || { echo "graph_threads.sh: no $graph500" >&2; exit 2; }

for ((round = 1; round <= rounds; round++)); do
  for config in $configs; do
    ranks=${config%x*} threads=${config#*x}
    line=$(AM_TRANSPORT=shm AM_RANKS=$ranks "$graph500" --scale "$scale" --kernel bfs \
      --roots "$roots" --threads "$threads" --json --quiet | grep '^{"bench":"graph500"')
    line="{\"config\":\"$config\",\"round\":$round,${line#\{}"
    echo "$line"
    [ -z "$out" ] || echo "$line" >>"$out"
  done
done
