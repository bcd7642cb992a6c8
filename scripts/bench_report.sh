#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The plotted benchmark report (docs/performance.md, "Benchmark report"): runs the benchmark
# programs one after another, keeps their JSON lines, and writes DIR/report.md with its PNGs
# (bench/scripts/bench_report.py): latency and bandwidth against size for am, MPI and UCX
# (when ucx_perftest is installed), message rate against size, typed rate and epoch cost
# against ranks, Graph500 TEPS against SCALE beside the Parallel BGL.
#
#   scripts/bench_report.sh [--quick [--tiny]] [--out DIR] [--build DIR] [--quiet]
#
#   --quick      about 90 s: fewer sizes, ranks and SCALEs, fewer repetitions
#   --tiny       with --quick: seconds (the CTest check; the figures mean nothing)
#   --out DIR    where report.md, the PNGs and data/ (JSON lines, stderr logs) go
#                (default: BUILD/bench_report)
#   --build DIR  the build directory holding the benchmarks (default: build)
#   --quiet      no progress display
#
# The full mode takes about 8.5 minutes on the 2-core machine, --quick 1.5. On a terminal, stderr shows the step, i of
# n, the elapsed time and an estimate of what remains; nothing when stderr is not a terminal
# or with --quiet. Needs Python with matplotlib (scripts/requirements.txt). Exit status: 0;
# 1 when a benchmark failed or a plot had no data (the report says which); 2 on bad usage or
# a missing program or matplotlib.
set -uo pipefail
invocation="scripts/bench_report.sh $*"
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
mode=full tiny=0 out="" build="$repo/build" quiet=0
usage() { sed -n '9,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) mode=quick ;;
        --tiny) tiny=1 ;;
        --full) mode=full ;;
        --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
        --build) [ $# -ge 2 ] || usage; build=$2; shift ;;
        --quiet) quiet=1 ;;
        -h | --help) usage 0 ;;
        *) echo "bench_report: unknown option $1" >&2; usage ;;
    esac
    shift
done
[ "$tiny" = 1 ] && [ "$mode" != quick ] && { echo "bench_report: --tiny goes with --quick" >&2; exit 2; }
[ "$tiny" = 1 ] && mode=tiny
build=$(cd "$build" 2>/dev/null && pwd) || { echo "bench_report: no build directory $build" >&2; exit 2; }
out=${out:-$build/bench_report}
mkdir -p "$out/data" && out=$(cd "$out" && pwd) || exit 2
data=$out/data

# A Python with matplotlib: $AM_PYTHON, Debian's /usr/bin/python3, or python3 on PATH.
python=""
for p in "${AM_PYTHON:-}" /usr/bin/python3 "$(command -v python3 || true)"; do
    if [ -n "$p" ] && [ -x "$p" ] && "$p" -c "import matplotlib" 2>/dev/null; then
        python=$p
        break
    fi
done
if [ -z "$python" ]; then
    echo "bench_report: no Python with matplotlib; install it with" >&2
    echo "  pip install -r $repo/scripts/requirements.txt   (or: apt-get install python3-matplotlib)" >&2
    echo "  or name one with AM_PYTHON=/path/to/python3" >&2
    exit 2
fi

# The steps: group (the data file and the plot it feeds), label, estimated seconds, command
# (relative to the build directory). The estimates are this 2-core machine's run times; they
# only feed the "remaining" of the progress display.
steps=()
step() { steps+=("$1|$2|$3|$4"); }
case "$mode" in
tiny)
    step am_pingpong am_pingpong 2 "bench/am_pingpong --json --reps 3 --iters 200 --sizes 8,4K,64K,256K"
    step am_flood am_flood 2 "bench/am_flood --json --reps 3 --iters 2000 --sizes 8,256,4K"
    for p in 2 4; do
        step typed_rate "typed_rate np$p" 1 "bench/typed_rate --json --reps 3 --ranks $p --messages 4K"
    done
    step epoch_overhead epoch_overhead 2 "bench/epoch_overhead --json --reps 3 --iters 200 --ranks 2,4"
    for s in 8 10; do
        step graph500 "graph500 SCALE $s" 1 "bench/graph/graph500_bench --scale $s --roots 4 --rounds 1"
    done ;;
quick)
    step am_pingpong am_pingpong 25 "bench/am_pingpong --json --reps 5 --rounds 3 --sizes 8,64,512,4K,32K,64K,256K,1M,4M"
    step am_flood am_flood 15 "bench/am_flood --json --reps 5 --rounds 3 --sizes 8,64,512,4K,32K"
    for p in 2 4 8; do
        step typed_rate "typed_rate np$p" 3 "bench/typed_rate --json --reps 5 --ranks $p --messages 4M"
    done
    step epoch_overhead epoch_overhead 7 "bench/epoch_overhead --json --reps 7 --min-ms 10 --ranks 2,4,8,16"
    for se in 10:1 12:1 14:2 16:6 18:30; do  # SCALE:estimated seconds
        step graph500 "graph500 SCALE ${se%:*}" "${se#*:}" \
            "bench/graph/graph500_bench --scale ${se%:*} --roots 16 --rounds 1"
    done ;;
full)
    step am_pingpong am_pingpong 70 "bench/am_pingpong --json --rounds 3"
    step am_flood am_flood 55 "bench/am_flood --json --rounds 3"
    for pe in 2:2 4:3 8:5 16:9; do  # ranks:estimated seconds
        step typed_rate "typed_rate np${pe%:*}" "${pe#*:}" "bench/typed_rate --json --ranks ${pe%:*}"
    done
    step epoch_overhead epoch_overhead 18 "bench/epoch_overhead --json --full"
    for se in 12:3 14:5 16:28 18:150; do  # SCALE:estimated seconds
        step graph500 "graph500 SCALE ${se%:*}" "${se#*:}" \
            "bench/graph/graph500_bench --scale ${se%:*} --roots 32 --rounds 3"
    done
    step graph500 "graph500 SCALE 20" 150 "bench/graph/graph500_bench --scale 20 --roots 16 --rounds 1" ;;
esac

# Every program must be there before anything runs.
for s in "${steps[@]}"; do
    IFS='|' read -r _ _ _ cmd <<<"$s"
    prog=${cmd%% *}
    if [ ! -x "$build/$prog" ]; then
        echo "bench_report: $build/$prog is missing; build the benchmarks first:" >&2
        echo "  cmake --build $build --target am_pingpong am_flood typed_rate epoch_overhead graph500_bench" >&2
        exit 2
    fi
done

# ------------------------------------------------------------------ progress display
show=0
[ "$quiet" = 0 ] && [ -t 2 ] && show=1
now_ms() { local t=${EPOCHREALTIME//[!0-9]/}; echo $((10#$t / 1000)); }  # any locale
# "12 s", "3 min 05 s", "1 h 02 min"
human() {
    local s=$1
    if [ "$s" -lt 60 ]; then printf '%d s' "$s"
    elif [ "$s" -lt 3600 ]; then printf '%d min %02d s' $((s / 60)) $((s % 60))
    else printf '%d h %02d min' $((s / 3600)) $((s % 3600 / 60)); fi
}
# Remaining: the estimates of the steps not finished, scaled by how the finished steps compared
# with their estimates, the running step's less the time it has run (not below 0).
remaining() {  # $1 index of the running step, $2 ms it has run, $3 ms of the finished steps
    local i=$1 ran=$2 done_ms=$3 est_done=0 est_cur=0 est_next=0 k e
    for ((k = 0; k < ${#steps[@]}; k++)); do
        IFS='|' read -r _ _ e _ <<<"${steps[k]}"
        if [ "$k" -lt "$i" ]; then est_done=$((est_done + e * 1000))
        elif [ "$k" = "$i" ]; then est_cur=$((e * 1000))
        else est_next=$((est_next + e * 1000)); fi
    done
    if [ "$est_done" -gt 0 ]; then
        est_cur=$((est_cur * done_ms / est_done))
        est_next=$((est_next * done_ms / est_done))
    fi
    est_cur=$((est_cur > ran ? est_cur - ran : 0))
    echo $(((est_cur + est_next + 500) / 1000))
}
draw() {  # $1 index, $2 label, $3 ms the step has run, $4 ms of the finished steps
    [ "$show" = 1 ] || return 0
    local elapsed=$((($(now_ms) - t_start) / 1000))
    printf '\r\033[Kstep %d of %d: %s  elapsed %s  remaining ~%s' $(($1 + 1)) ${#steps[@]} "$2" \
        "$(human "$elapsed")" "$(human "$(remaining "$1" "$3" "$4")")" >&2
}
clear_line() { [ "$show" = 1 ] && printf '\r\033[K' >&2; return 0; }

# ------------------------------------------------------------------ the runs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -f "$data"/*.jsonl "$data"/*.log "$data/steps.tsv" "$out"/*.png "$out/report.md"
child=""
# Each benchmark leads a process group of its own (setsid), so that an interrupt ends it with
# everything it started (ranks, mpirun, ucx_perftest).
trap 'clear_line; [ -n "$child" ] && kill -TERM -- "-$child" 2>/dev/null; exit 130' INT TERM
t_start=$(now_ms)
finished_ms=0
failed=0
for ((i = 0; i < ${#steps[@]}; i++)); do
    IFS='|' read -r group label _ cmd <<<"${steps[i]}"
    t0=$(now_ms)
    echo "== $label: $cmd" >>"$data/$group.log"
    (cd "$build" && exec setsid $cmd) >>"$data/$group.jsonl" 2>>"$data/$group.log" &
    child=$!
    # At most 4 redraws a second, and none without a terminal.
    while [ "$show" = 1 ] && kill -0 "$child" 2>/dev/null; do
        draw "$i" "$label" $(($(now_ms) - t0)) "$finished_ms"
        sleep 0.25
    done
    wait "$child"
    status=$?
    child=""
    t1=$(now_ms)
    finished_ms=$((finished_ms + t1 - t0))
    # 3: the am figures are there but the MPI baseline was not built (bench/lib/baseline.hpp).
    if [ "$status" != 0 ] && [ "$status" != 3 ]; then
        failed=1
        clear_line
        echo "bench_report: $label failed (exit status $status); see $data/$group.log" >&2
    fi
    printf '%s\t%d\t%d.%03d\t%s\n' "$label" "$status" $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000)) \
        "$cmd" >>"$data/steps.tsv"
done
clear_line

"$python" "$repo/bench/scripts/bench_report.py" --data "$data" --out "$out" --build "$build" \
    --mode "$mode" --invocation "$invocation"
rc=$?
[ "$rc" = 2 ] && exit 2
[ "$quiet" = 1 ] || echo "bench_report: wrote $out/report.md ($(((finished_ms + 500) / 1000)) s of benchmarks)"
[ "$rc" = 0 ] && [ "$failed" = 0 ] || exit 1
