#!/usr/bin/env bash
# Remote fetch_add and 1 MiB put between 2 emulated hosts x 1 rank (scripts/multihost.sh), one
# invocation, in rounds:
#   atomic_bench  am on the ucx transport (UCP atomics and puts, UCX_TLS=tcp,self
#                 UCX_NET_DEVICES=eth0: TCP over the emulated link), am on the mpi transport
#                 (a request run at the owner; puts as long messages), and MPI one-sided in the
#                 same processes (MPI_Fetch_and_op, MPI_Put + MPI_Win_flush; Open MPI's osc
#                 pt2pt: osc rdma cannot make a window over btl tcp, "MPI_ERR_WIN")
#   ucx_perftest  ucp_fadd (fetch-and-add latency, then rate) and ucp_put_bw of 1 MiB, server on
#                 host 1, client on host 0, same UCX_TLS (multihost_ucx.sh --ucx-pair)
# Prints the JSON lines with "round" added.
#   bench/scripts/multihost_onesided.sh BUILD_DIR [ROUNDS] [REPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: multihost_onesided.sh BUILD_DIR [ROUNDS] [REPS]}" && pwd)
rounds=${2:-3}
reps=${3:-5}
pair=$here/multihost_ucx.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mh=("$here/../../scripts/multihost.sh" --hosts 2 --ppn 1 --timeout 300 --mpi-arg --bind-to
    --mpi-arg none --mpi-arg --mca --mpi-arg osc --mpi-arg pt2pt
    --mpi-arg -x --mpi-arg UCX_TLS=tcp,self --mpi-arg -x --mpi-arg UCX_NET_DEVICES=eth0)

# perftest TEST SIZE ITERS METRIC ROUND: ucx_perftest between the hosts, one JSON line.
perftest() {
  local test=$1 size=$2 iters=$3 metric=$4 round=$5 r dir=$tmp/ucx
  rm -rf "$dir" && mkdir -p "$dir"
  for ((r = 0; r < reps; r++)); do echo "0:$r -t $test -s $size -n $iters -w $((iters / 10))"; done \
    >"$dir/batch"
  "${mh[@]}" -- "$pair" --ucx-pair "$dir" "$dir/batch" >"$dir/csv" 2>"$tmp/stderr" || {
    echo "multihost_onesided: FAILED: ucx_perftest $test" >&2
    tail -n 20 "$tmp/stderr" "$dir/server.log" 2>/dev/null >&2
    return 0
  }
  /usr/bin/python3 - "$dir/csv" "$test" "$size" "$metric" "$round" <<'PY'
import json, statistics, sys
path, test, size, metric, rnd = sys.argv[1:]
v = []
for line in open(path):
    f = line.strip().split(",")
    if not f[0].startswith("0:"):
        continue
    # CSV: name, iterations, percentile, average and overall latency (us), average and overall
    # bandwidth (MiB/s), average and overall message rate (1/s).
    v.append({"latency_us": float(f[4]), "rate_Mopsps": float(f[8]) / 1e6,
              "bandwidth_GBps": float(f[6]) * 1048576 / 1e9}[metric])
print(json.dumps({"round": int(rnd), "bench": "atomic_bench", "system": "ucx",
                  "transport": "ucx-tcp", "ranks": 2, "op": test, "bytes": int(size),
                  "metric": metric, "median": statistics.median(v), "min": min(v), "max": max(v),
                  "reps": len(v)}))
PY
}

for ((k = 0; k < rounds; k++)); do
  "${mh[@]}" -- "$build/bench/atomic_bench" --reps "$reps" --iters 2000 --put-iters 20 \
    --transports ucx,mpi --json 2>"$tmp/stderr" | grep '^{"bench"' | sed "s/^{/{\"round\":$k,/" ||
    { echo "multihost_onesided: FAILED: atomic_bench, round $k" >&2; tail -n 20 "$tmp/stderr" >&2; }
  perftest ucp_fadd 8 2000 latency_us "$k"
  perftest ucp_fadd 8 20000 rate_Mopsps "$k"
  perftest ucp_put_bw 1048576 200 bandwidth_GBps "$k"
done
