#!/usr/bin/env bash
# Graph500 BFS on 2 emulated hosts x 1 rank beside the same job on one host (issue 20), in one
# invocation, the configurations alternating round by round:
#   one-host-rings  mpirun -n 2 on the machine; the two ranks share memory (am's node rings)
#   one-host-mpi    the same with AM_NODE_SIZE=1: every message through MPI (Open MPI's shared
#                   memory between the two processes)
#   two-hosts       scripts/multihost.sh --hosts 2 --ppn 1: every message through MPI over TCP
#                   across a veth pair and a bridge (no delay: see docs/transports.md)
#   two-hosts-ucx   the same with AM_TRANSPORT=ucx: every message through UCP active messages,
#                   UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 (UCX over TCP on the emulated link)
#   two-hosts-x2, two-hosts-x2-ucx   the two above with 2 ranks per host (--ppn 2): the ranks
#                   of a host share memory (am's node rings), the others through MPI or UCX
# CONFIGS (comma-separated) chooses which run, in that order (default the first three); the
# ratio of each to the first of them is printed.
# All run the same binary, graph, roots and kernel, unbound (the emulated hosts each believe they
# own every core, so binding would put both ranks on core 0). Every run validates its searches
# (--validate). Prints am-graph500's JSON line per run with "config" and "round" added, then per
# configuration one line with the median over the rounds of the harmonic-mean TEPS (metric
# "teps_median_of_rounds", "reps" the runs that succeeded, "failed" those that did not) and the
# ratio to one-host-rings.
# A run fails when its command exits non-zero, prints other than one Graph500 JSON line, or that
# line is not "validated":true; it is named on stderr at once with the end of its stderr, is not
# in the medians, and the script then exits 1 after the summary (0 when every run succeeded).
#   bench/scripts/multihost_graph500.sh BUILD_DIR [SCALE] [ROUNDS] [ROOTS] [CONFIGS]
set -euo pipefail
build=${1:?usage: multihost_graph500.sh BUILD_DIR [SCALE] [ROUNDS] [ROOTS] [CONFIGS]}
scale=${2:-18}
rounds=${3:-3}
roots=${4:-16}
IFS=, read -r -a configs <<<"${5:-one-host-rings,one-host-mpi,two-hosts}"
here=$(cd "$(dirname "$0")" && pwd)
graph500=$(cd "$build" && pwd)/apps/graph/am-graph500
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args=(--scale "$scale" --kernel bfs --roots "$roots" --json --quiet --validate)
out=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$out" "$tmp"' EXIT
failed=0

# run CONFIG ROUND COMMAND...: the run's JSON line (with config and round) to stdout and $out,
# or, when it failed, a report on stderr and nothing in $out.
run() {
  local config=$1 round=$2
  shift 2
  local status=0 lines valid
  "$@" >"$tmp/stdout" 2>"$tmp/stderr" || status=$?
  lines=$(grep -c '^{"bench":"graph500"' "$tmp/stdout" || true)
  valid=$(grep '^{"bench":"graph500"' "$tmp/stdout" | grep -c '"validated":true' || true)
  if ((status != 0 || lines != 1 || valid != 1)); then
    failed=$((failed + 1))
    echo "multihost_graph500: FAILED: $config, round $round: exit status $status," \
      "$lines Graph500 line(s), $valid validated; the end of its stderr:" >&2
    tail -n 20 "$tmp/stderr" | sed 's/^/  | /' >&2
    echo "{\"config\":\"$config\",\"round\":$round,\"failed\":true,\"status\":$status}" >>"$out"
    return 0
  fi
  grep '^{"bench":"graph500"' "$tmp/stdout" |
    sed "s/^{/{\"config\":\"$config\",\"round\":$round,/" | tee -a "$out"
}

multihost=("$here/../../scripts/multihost.sh" --hosts 2)
ucx=(--mpi-arg -x --mpi-arg AM_TRANSPORT=ucx --mpi-arg -x --mpi-arg UCX_TLS=tcp,self
     --mpi-arg -x --mpi-arg UCX_NET_DEVICES=eth0)
for ((r = 0; r < rounds; r++)); do
  for c in "${configs[@]}"; do
    case "$c" in
      one-host-rings) run "$c" "$r" mpirun -n 2 --bind-to none "$graph500" "${args[@]}" ;;
      one-host-mpi)
        run "$c" "$r" env AM_NODE_SIZE=1 mpirun -n 2 --bind-to none -x AM_NODE_SIZE \
          "$graph500" "${args[@]}" ;;
      two-hosts) run "$c" "$r" "${multihost[@]}" --ppn 1 -- "$graph500" "${args[@]}" ;;
      two-hosts-ucx)
        run "$c" "$r" "${multihost[@]}" --ppn 1 "${ucx[@]}" -- "$graph500" "${args[@]}" ;;
      two-hosts-x2) run "$c" "$r" "${multihost[@]}" --ppn 2 -- "$graph500" "${args[@]}" ;;
      two-hosts-x2-ucx)
        run "$c" "$r" "${multihost[@]}" --ppn 2 "${ucx[@]}" -- "$graph500" "${args[@]}" ;;
      *) echo "multihost_graph500: unknown configuration '$c'" >&2; exit 2 ;;
    esac
  done
done

python3 - "$out" "$scale" "$here" "${configs[0]}" <<'PY'
import json, statistics, sys
sys.path.insert(0, sys.argv[3])
import benchjson  # bench/scripts/benchjson.py: the shared JSON-lines loader
rows = benchjson.load([sys.argv[1]])
by, failed = {}, {}
for r in rows:
    by.setdefault(r["config"], [])
    failed.setdefault(r["config"], 0)
    if r.get("failed"):
        failed[r["config"]] += 1
    else:
        by[r["config"]].append(r["harmonic_mean"])
first = sys.argv[4]  # the ratios are to the first configuration
base = statistics.median(by[first]) if by.get(first) else None
for config, teps in by.items():
    med = statistics.median(teps) if teps else None
    print(json.dumps({"bench": "multihost_graph500", "system": "am",
                      "transport": "ucx" if config.endswith("-ucx") else "mpi",
                      "ranks": 4 if "-x2" in config else 2, "op": "bfs", "bytes": 0, "metric": "teps_median_of_rounds",
                      "median": med, "min": min(teps, default=None),
                      "max": max(teps, default=None), "reps": len(teps),
                      "failed": failed[config], "config": config, "scale": int(sys.argv[2]),
                      "ratio_to_" + first.replace("-", "_"): med / base if base and med
                      else None}))
PY
if ((failed > 0)); then
  echo "multihost_graph500: $failed run(s) failed (named above); the medians are over the" \
    "runs that succeeded (\"reps\")" >&2
  exit 1
fi
