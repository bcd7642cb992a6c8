#!/usr/bin/env bash
# Graph500 BFS on 2 emulated hosts x 1 rank beside the same job on one host (issue 20), in one
# invocation, the configurations alternating round by round:
#   one-host-rings  mpirun -n 2 on the machine; the two ranks share memory (am's node rings)
#   one-host-mpi    the same with AM_NODE_SIZE=1: every message through MPI (Open MPI's shared
#                   memory between the two processes)
#   two-hosts       scripts/multihost.sh --hosts 2 --ppn 1: every message through MPI over TCP
#                   across a veth pair and a bridge (no delay: see docs/transports.md)
# All run the same binary, graph, roots and kernel, unbound (the emulated hosts each believe they
# own every core, so binding would put both ranks on core 0). Prints am-graph500's JSON line per
# run with "config" added, then per configuration one line with the median over the rounds of
# the harmonic-mean TEPS (metric "teps_median_of_rounds") and the ratio to one-host-rings.
#   bench/scripts/multihost_graph500.sh BUILD_DIR [SCALE] [ROUNDS] [ROOTS]
set -euo pipefail
build=${1:?usage: multihost_graph500.sh BUILD_DIR [SCALE] [ROUNDS] [ROOTS]}
scale=${2:-18}
rounds=${3:-3}
roots=${4:-16}
here=$(cd "$(dirname "$0")" && pwd)
graph500=$(cd "$build" && pwd)/apps/graph/am-graph500
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args=(--scale "$scale" --kernel bfs --roots "$roots" --json --quiet)
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() {
  local config=$1
  shift
  "$@" 2>/dev/null | grep '^{"bench":"graph500"' |
    sed "s/^{/{\"config\":\"$config\",/" | tee -a "$out"
}

for ((r = 0; r < rounds; r++)); do
  run one-host-rings mpirun -n 2 --bind-to none "$graph500" "${args[@]}"
  run one-host-mpi env AM_NODE_SIZE=1 mpirun -n 2 --bind-to none -x AM_NODE_SIZE \
    "$graph500" "${args[@]}"
  run two-hosts "$here/../../scripts/multihost.sh" --hosts 2 --ppn 1 -- "$graph500" "${args[@]}"
done

python3 - "$out" "$scale" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["config"], []).append(r["harmonic_mean"])
base = statistics.median(by["one-host-rings"]) if "one-host-rings" in by else None
for config, teps in by.items():
    med = statistics.median(teps)
    print(json.dumps({"bench": "multihost_graph500", "system": "am", "transport": "mpi",
                      "ranks": 2, "op": "bfs", "bytes": 0, "metric": "teps_median_of_rounds",
                      "median": med, "min": min(teps), "max": max(teps), "reps": len(teps),
                      "config": config, "scale": int(sys.argv[2]),
                      "ratio_to_one_host_rings": med / base if base else None}))
PY
