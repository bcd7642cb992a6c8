#!/bin/sh
# Runs am-graph500 (directly, with AM_TRANSPORT/AM_RANKS, or under mpiexec) and checks what it
# printed. No time limit: CTest's TIMEOUT is the only one.
#   cli_check.sh ok TRANSPORT RANKS KERNELS REPS [FIELD...] -- COMMAND...
#     exit status 0; for every kernel K of the comma-separated KERNELS exactly one line
#     "K validation: passed" and exactly one JSON line with "op":"K" carrying the bench fields
#     (bench, system, transport TRANSPORT, ranks RANKS, op, bytes, metric, median, min, max,
#     reps REPS) and each FIELD text (e.g. '"threads":2}'); no other JSON line.
#   cli_check.sh fail TEXT -- COMMAND...
#     non-zero exit status, TEXT on stderr, nothing on stdout.
set -u
mode=$1
shift
if [ "$mode" = ok ]; then
    transport=$1 ranks=$2 kernels=$3 reps=$4
    shift 4
    fields=
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        fields="$fields
$1"
        shift
    done
else
    text=$1
    shift
fi
[ "$1" = "--" ] || { echo "cli_check: usage error" >&2; exit 2; }
shift

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "--- command: $* (exit $rc)"
echo "--- stdout:"; cat "$tmp/out"
echo "--- stderr:"; cat "$tmp/err"

fail=0
complain() { echo "cli_check: FAIL: $*" >&2; fail=1; }

if [ "$mode" = fail ]; then
    [ $rc -ne 0 ] || complain "exit status 0, expected a failure"
    grep -q -F -- "$text" "$tmp/err" || complain "\"$text\" not in stderr"
    [ ! -s "$tmp/out" ] || complain "something on stdout"
    exit $fail
fi

[ $rc -eq 0 ] || complain "exit status $rc, expected 0"
grep '^{' "$tmp/out" >"$tmp/json"
count=0
for kernel in $(echo "$kernels" | tr ',' ' '); do
    count=$((count + 1))
    n=$(grep -c -x -F "$kernel validation: passed" "$tmp/out")
    [ "$n" -eq 1 ] || complain "\"$kernel validation: passed\" $n times, expected once"
    n=$(grep -c -F "\"op\":\"$kernel\"" "$tmp/json")
    [ "$n" -eq 1 ] || complain "$n JSON lines for $kernel, expected one"
    line=$(grep -F "\"op\":\"$kernel\"" "$tmp/json" | head -n 1)
    for field in '"bench":"graph500"' '"system":"am"' "\"transport\":\"$transport\"" \
                 "\"ranks\":$ranks," '"bytes":0,' '"metric":"teps"' "\"reps\":$reps,"; do
        case "$line" in
            *"$field"*) ;;
            *) complain "$kernel JSON line lacks $field: $line" ;;
        esac
    done
    while IFS= read -r field; do
        [ -z "$field" ] && continue
        case "$line" in
            *"$field"*) ;;
            *) complain "$kernel JSON line lacks $field: $line" ;;
        esac
    done <<FIELDS
$fields
FIELDS
    for number in median min max; do
        echo "$line" | grep -q -E "\"$number\":[0-9][0-9.e+-]*[,}]" ||
            complain "$kernel JSON line lacks a number \"$number\": $line"
    done
done
n=$(wc -l <"$tmp/json")
[ "$n" -eq "$count" ] || complain "$n JSON lines, expected $count"
grep -q -F "FAILED" "$tmp/out" && complain "FAILED on stdout"
exit $fail
