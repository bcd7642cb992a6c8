#!/bin/sh
# Instructions per null RPC round trip (am::rpc<&f>(ctx, rank).get()) and per hand-coded AM
# round trip (short request, token.reply, poll until the reply ran), and per message to a
# plain and to an optimistic handler that does not block (short request, poll until it ran),
# counted by valgrind's callgrind on one rank of the threads transport sending to itself
# (deterministic counts).
#
#   bench/scripts/count_rpc_instructions.sh [BUILD_DIR] [ITERS]
#
# rpc_bench --count-loop ITERS runs both loops after warm-ups; each valgrind run collects only
# the instructions inside one of them (--toggle-collect), divided by ITERS. The callgrind files
# stay in a temporary directory (printed) for callgrind_annotate.
set -eu
build=${1:-build}
iters=${2:-20000}
exe="$build/bench/rpc_bench"
[ -x "$exe" ] || { echo "count_rpc_instructions: $exe not found (ninja -C $build rpc_bench)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "count_rpc_instructions: valgrind not installed" >&2; exit 1; }
out=$(mktemp -d /tmp/am-rpc-callgrind.XXXXXX)
for loop in rpc_bench_rpc_loop rpc_bench_am_loop rpc_bench_plain_loop rpc_bench_oam_loop; do
    valgrind --tool=callgrind --callgrind-out-file="$out/$loop.out" --toggle-collect="$loop*" \
        "$exe" --count-loop "$iters" >"$out/$loop.stdout" 2>"$out/$loop.log" || {
        echo "count_rpc_instructions: valgrind run failed, see $out/$loop.log" >&2
        exit 1
    }
    ir=$(awk '/^totals:/ { print $2 }' "$out/$loop.out")
    case $loop in
        rpc_bench_rpc_loop) what="null RPC round trip (am::rpc<&f>(ctx, 0).get())" ;;
        rpc_bench_am_loop) what="hand-coded AM round trip (request + token.reply)" ;;
        rpc_bench_plain_loop) what="message to a plain handler (request + dispatch)" ;;
        *) what="message to an optimistic handler (request + dispatch)" ;;
    esac
    awk -v t="$ir" -v n="$iters" -v w="$what" \
        'BEGIN { printf "instructions per %s: %.1f\n", w, t / n }'
done
echo "profiles: $out/*.out (callgrind_annotate FILE)"
