#!/usr/bin/env bash
# 8-byte latency and message rate between 2 emulated hosts x 1 rank (scripts/multihost.sh), the
# ucx transport beside the mpi transport and both baselines, in one invocation, the runs
# alternating round by round:
#   am ucx        am_pingpong / am_flood --transport ucx: am's messages through UCP active
#                 messages, UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 (TCP over the emulated link)
#   am mpi        the same with --transport mpi (node size 1): Open MPI ob1/tcp over the link
#   mpi           mpi_baseline pingpong / flood: MPI_Send/MPI_Recv ping-pong and windowed
#                 MPI_Isend (window 64), the raw MPI figures the am programs compare with
#   ucx           ucx_perftest ucp_am_lat / ucp_am_bw, server on host 1, client on host 0,
#                 same UCX_TLS, one batch line per repetition (as bench/lib/ucx_baseline.cpp)
# Rank r (host r) is pinned to core r with taskset (launcher binding off: every emulated host
# believes it owns both cores). Options of the benchmarks: --sizes 8 --reps REPS; latency
# 10000 round trips and rate 200000 messages per repetition (their defaults).
# Prints every JSON line with "round" added, then (bench "<bench>_2hosts") per (system,
# transport, op, metric) the median over the rounds of the per-round medians, min of minima,
# max of maxima, reps summed; and the ratios am-ucx/ucx, am-ucx/mpi, am-ucx/am-mpi, am-mpi/mpi
# (latency_ratio, rate_ratio), each taken within a round, median/min/max over the rounds.
#   bench/scripts/multihost_ucx.sh BUILD_DIR [ROUNDS] [REPS]
# Internal modes, run on each emulated host by the launcher:
#   multihost_ucx.sh --pin-by-rank PROGRAM ARGS...   exec PROGRAM on core $OMPI_COMM_WORLD_RANK
#   multihost_ucx.sh --ucx-pair DIR BATCH            rank 1: ucx_perftest server; rank 0: client
set -euo pipefail

if [[ "${1:-}" == --pin-by-rank ]]; then
  shift
  exec taskset -c "${OMPI_COMM_WORLD_RANK:?not under mpirun}" "$@"
fi
if [[ "${1:-}" == --ucx-pair ]]; then
  dir=$2 batch=$3 port=13337
  rank=${OMPI_COMM_WORLD_RANK:?not under mpirun}
  export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0
  if ((rank == 1)); then
    taskset -c 1 ucx_perftest -p "$port" -b "$batch" >"$dir/server.log" 2>&1 &
    server=$!
    hex=$(printf ':%04X' "$port")
    for ((i = 0; i < 1000; i++)); do
      awk -v p="$hex" '$4 == "0A" && $2 ~ p"$" {f = 1} END {exit !f}' /proc/net/tcp && break
      sleep 0.01
    done
    ip -4 -o addr show eth0 | awk '{split($4, a, "/"); print a[1]}' >"$dir/server.addr.tmp"
    mv "$dir/server.addr.tmp" "$dir/server.addr"
    wait "$server"
  else
    for ((i = 0; i < 1000; i++)); do
      [[ -s "$dir/server.addr" ]] && break
      sleep 0.01
    done
    taskset -c 0 ucx_perftest "$(cat "$dir/server.addr")" -p "$port" -b "$batch" -v -f \
      2>"$dir/client.err" | grep -E '^[0-9]+:[0-9]+,' || {
      cat "$dir/client.err" >&2
      exit 1
    }
  fi
  exit 0
fi

build=$(cd "${1:?usage: multihost_ucx.sh BUILD_DIR [ROUNDS] [REPS]}" && pwd)
rounds=${2:-3}
reps=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
self=$here/$(basename "$0")
multihost=$here/../../scripts/multihost.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/all.jsonl
failed=0
mh=("$multihost" --hosts 2 --ppn 1 --timeout 300 --mpi-arg --bind-to --mpi-arg none
    --mpi-arg -x --mpi-arg UCX_TLS=tcp,self --mpi-arg -x --mpi-arg UCX_NET_DEVICES=eth0)
common=(--sizes 8 --reps "$reps" --json)

# run NAME ROUND COMMAND...: its JSON lines, with "round", to stdout and $out; a failure is
# named on stderr with the end of its output.
run() {
  local name=$1 round=$2 status=0
  shift 2
  "$@" >"$tmp/stdout" 2>"$tmp/stderr" || status=$?
  if ((status != 0)) || ! grep -q '^{"bench"' "$tmp/stdout"; then
    failed=$((failed + 1))
    echo "multihost_ucx: FAILED: $name, round $round: exit status $status; the end of its output:" >&2
    tail -n 20 "$tmp/stdout" "$tmp/stderr" | sed 's/^/  | /' >&2
    return 0
  fi
  grep '^{"bench"' "$tmp/stdout" | sed "s/^{/{\"round\":$round,/" | tee -a "$out"
}

# ucx_pair BENCH TEST METRIC ITERS ROUND: ucx_perftest between the hosts, as JSON lines.
ucx_pair() {
  local bench=$1 test=$2 metric=$3 iters=$4 round=$5 r
  local dir=$tmp/ucx
  rm -rf "$dir" && mkdir -p "$dir"
  for ((r = 0; r < reps; r++)); do
    echo "0:$r -t $test -s 8 -n $iters -w $((iters / 10))"
  done >"$dir/batch"
  local status=0
  "${mh[@]}" -- "$self" --ucx-pair "$dir" "$dir/batch" >"$dir/csv" 2>"$tmp/stderr" || status=$?
  if ((status != 0)) || [[ $(grep -c '^0:' "$dir/csv" || true) -ne $reps ]]; then
    failed=$((failed + 1))
    echo "multihost_ucx: FAILED: ucx_perftest $test, round $round: exit status $status" >&2
    tail -n 20 "$dir/csv" "$tmp/stderr" "$dir/server.log" 2>/dev/null | sed 's/^/  | /' >&2
    return 0
  fi
  # CSV: name, iterations, percentile, average and overall latency (µs), average and overall
  # bandwidth (MiB/s), average and overall message rate (1/s): as ucx_baseline.cpp reads it.
  /usr/bin/python3 - "$dir/csv" "$bench" "$test" "$metric" "$round" <<'PY' | tee -a "$out"
import json, statistics, sys
path, bench, test, metric, rnd = sys.argv[1:]
v = []
for line in open(path):
    f = line.strip().split(",")
    v.append(float(f[4]) if metric == "latency_us" else float(f[8]) / 1e6)
print(json.dumps({"round": int(rnd), "bench": bench, "system": "ucx", "transport": "ucx-tcp",
                  "ranks": 2, "op": test, "bytes": 8, "metric": metric,
                  "median": statistics.median(v), "min": min(v), "max": max(v), "reps": len(v)}))
PY
}

for ((k = 0; k < rounds; k++)); do
  for t in ucx mpi; do
    run "am_pingpong $t" "$k" "${mh[@]}" -- "$self" --pin-by-rank "$build/bench/am_pingpong" \
      --transport "$t" --no-pin --no-baseline --ops short "${common[@]}"
  done
  run "mpi_baseline pingpong" "$k" "${mh[@]}" -- "$self" --pin-by-rank \
    "$build/bench/mpi_baseline" pingpong --bench am_pingpong "${common[@]}"
  ucx_pair am_pingpong ucp_am_lat latency_us 10000 "$k"
  for t in ucx mpi; do
    run "am_flood $t" "$k" "${mh[@]}" -- "$self" --pin-by-rank "$build/bench/am_flood" \
      --transport "$t" --no-pin --no-baseline --ops short,medium "${common[@]}"
  done
  run "mpi_baseline flood" "$k" "${mh[@]}" -- "$self" --pin-by-rank \
    "$build/bench/mpi_baseline" flood --bench am_flood "${common[@]}"
  ucx_pair am_flood ucp_am_bw rate_Mmsgps 200000 "$k"
done

/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keyf = lambda r: (r["bench"], r["system"], r["transport"], r["op"], r["metric"])
pooled, by_round = {}, {}
for r in rows:
    if r["system"] == "cacheline":
        continue
    pooled.setdefault(keyf(r), []).append(r)
    by_round.setdefault(r["round"], {})[keyf(r)] = r["median"]
def line(bench, system, transport, op, metric, values, reps):
    print(json.dumps({"bench": bench + "_2hosts", "system": system, "transport": transport,
                      "ranks": 2, "op": op, "bytes": 8, "metric": metric,
                      "median": statistics.median(values), "min": min(values),
                      "max": max(values), "reps": reps}))
for k, rs in pooled.items():  # median of the round medians, min of minima, max of maxima
    print(json.dumps({"bench": k[0] + "_2hosts", "system": k[1], "transport": k[2], "ranks": 2,
                      "op": k[3], "bytes": 8, "metric": k[4],
                      "median": statistics.median(r["median"] for r in rs),
                      "min": min(r["min"] for r in rs), "max": max(r["max"] for r in rs),
                      "reps": sum(r["reps"] for r in rs)}))
# Ratios of the medians within each round; median, min and max over the rounds.
def ratio(bench, metric, num, den, name):
    v = [m[(bench,) + num + (metric,)] / m[(bench,) + den + (metric,)]
         for m in by_round.values()
         if (bench,) + num + (metric,) in m and (bench,) + den + (metric,) in m]
    if v:
        line(bench, name, num[1], num[2], metric.split("_")[0] + "_ratio", v, len(v))
for bench, metric, ucx_op, mpi_op, ops in (
        ("am_pingpong", "latency_us", "ucp_am_lat", "send_recv", ["short"]),
        ("am_flood", "rate_Mmsgps", "ucp_am_bw", "isend_window", ["short", "medium"])):
    for op in ops:
        ratio(bench, metric, ("am", "ucx", op), ("ucx", "ucx-tcp", ucx_op), "am-ucx/ucx")
        ratio(bench, metric, ("am", "ucx", op), ("mpi", "mpi", mpi_op), "am-ucx/mpi")
        ratio(bench, metric, ("am", "ucx", op), ("am", "mpi", op), "am-ucx/am-mpi")
        ratio(bench, metric, ("am", "mpi", op), ("mpi", "mpi", mpi_op), "am-mpi/mpi")
PY
if ((failed > 0)); then
  echo "multihost_ucx: $failed run(s) failed (named above)" >&2
  exit 1
fi
