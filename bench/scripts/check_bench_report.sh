#!/bin/sh
# The CTest check of scripts/bench_report.sh (am.bench.report.tiny): its tiny mode, twice.
#   check_bench_report.sh REPO BUILD
# 1. stdout and stderr to files: exit status 0, no progress display (no carriage return),
#    report.md naming the machine, the commit, the date and the commands, and every plot
#    (latency, bandwidth, message_rate, typed_rate, epoch_cost, graph500) listed in it and
#    written beside it as a non-empty PNG.
# 2. stderr on a terminal (script(1)): the progress display, step i of n with elapsed and
#    remaining time, erased at the end. Skipped without script(1).
set -u
repo=$1 build=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
complain() { echo "check_bench_report: FAIL: $*" >&2; fail=1; }
cr=$(printf '\r')

"$repo/scripts/bench_report.sh" --quick --tiny --build "$build" --out "$tmp/a" \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "--- stdout:"; cat "$tmp/out"
echo "--- stderr:"; cat "$tmp/err"
[ "$rc" = 0 ] || complain "exit status $rc"
grep -q "$cr" "$tmp/out" "$tmp/err" && complain "a carriage return without a terminal"
report=$tmp/a/report.md
if [ ! -s "$report" ]; then
    complain "no report.md"
else
    for field in "| host |" "| CPU |" "| cores |" "| memory |" "| kernel |" "| commit |" \
                 "| date |" "## Commands" "bench/am_pingpong --json"; do
        grep -q -F -- "$field" "$report" || complain "report.md lacks \"$field\""
    done
    for plot in latency bandwidth message_rate typed_rate epoch_cost graph500; do
        grep -q -F "]($plot.png)" "$report" || complain "report.md does not show $plot.png"
    done
    # Every PNG the report shows: there, not empty, a PNG (its 8-byte signature).
    for png in $(sed -n 's/.*](\([^)]*\.png\)).*/\1/p' "$report"); do
        f=$tmp/a/$png
        if [ ! -s "$f" ]; then
            complain "$png is missing or empty"
        elif [ "$(od -An -tx1 -N8 "$f" | tr -d ' \n')" != 89504e470d0a1a0a ]; then
            complain "$png is not a PNG"
        fi
    done
fi

if command -v script >/dev/null 2>&1; then
    script -qec "'$repo/scripts/bench_report.sh' --quick --tiny --build '$build' --out '$tmp/b' >'$tmp/out2'" \
        "$tmp/tty" >/dev/null 2>&1 || complain "exit status $? on a terminal"
    grep -q -E "step 1 of [0-9]+: am_pingpong  elapsed [0-9]+ s  remaining ~[0-9]+ s" "$tmp/tty" ||
        complain "no progress display on a terminal"
    grep -q -E "step ([0-9]+) of \1: graph500" "$tmp/tty" || complain "the last step was not shown"
    [ -s "$tmp/b/report.md" ] || complain "no report.md when run on a terminal"
else
    echo "check_bench_report: no script(1): the terminal case is not checked"
fi
[ "$fail" = 0 ] && echo "check_bench_report: passed"
exit $fail
