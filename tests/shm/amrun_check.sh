#!/bin/sh
# Runs an am program (through amrun, mpiexec, or directly with AM_RANKS/AM_TRANSPORT) and
# checks the outcome: exit status, what stdout/stderr must (not) contain, wall time, and that
# no am-* object was left in /dev/shm.
#   amrun_check.sh --expect ok|fail [--stdout-count TEXT N] [--stderr TEXT]... [--max-seconds S]
#                  [--output TEXT]... [--not-output TEXT]... [--stderr-regex ERE]... -- COMMAND...
# --output: TEXT on stdout or stderr (mpiexec reports some failures on either);
# --not-output: TEXT on neither; --stderr-regex: a line of stderr matches the extended regular
# expression (grep -E), e.g. a line of one rank naming another.
set -u
expect=ok
max_seconds=10
stdout_text=""
stdout_count=0
stderr_texts=""
output_texts=""
not_output_texts=""
stderr_regexes=""
while [ $# -gt 0 ]; do
    case "$1" in
        --expect) expect=$2; shift 2 ;;
        --max-seconds) max_seconds=$2; shift 2 ;;
        --stdout-count) stdout_text=$2; stdout_count=$3; shift 3 ;;
        --stderr) stderr_texts="$stderr_texts
$2"; shift 2 ;;
        --output) output_texts="$output_texts
$2"; shift 2 ;;
        --not-output) not_output_texts="$not_output_texts
$2"; shift 2 ;;
        --stderr-regex) stderr_regexes="$stderr_regexes
$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "amrun_check: unknown option $1" >&2; exit 2 ;;
    esac
done

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/shm_objects.sh"
am_shm_list >"$tmp/before"

start=$(date +%s%N)
"$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
end=$(date +%s%N)
elapsed_ms=$(( (end - start) / 1000000 ))

fail=0
complain() { echo "amrun_check: FAIL: $*" >&2; fail=1; }

echo "--- command: $* (exit $rc, ${elapsed_ms} ms)"
echo "--- stdout:"; cat "$tmp/out"
echo "--- stderr:"; cat "$tmp/err"

if [ "$expect" = ok ] && [ $rc -ne 0 ]; then complain "exit status $rc, expected 0"; fi
if [ "$expect" = fail ] && [ $rc -eq 0 ]; then complain "exit status 0, expected a failure"; fi
if [ $elapsed_ms -gt $((max_seconds * 1000)) ]; then
    complain "took ${elapsed_ms} ms, limit ${max_seconds} s"
fi
if [ -n "$stdout_text" ]; then
    n=$(grep -c -F -- "$stdout_text" "$tmp/out")
    [ "$n" -eq "$stdout_count" ] || complain "\"$stdout_text\" on stdout $n times, expected $stdout_count"
fi
printf '%s\n' "$stderr_texts" | while IFS= read -r text; do
    [ -z "$text" ] && continue
    grep -q -F -- "$text" "$tmp/err" || { echo "amrun_check: FAIL: \"$text\" not in stderr" >&2; exit 1; }
done || fail=1
printf '%s\n' "$stderr_regexes" | while IFS= read -r text; do
    [ -z "$text" ] && continue
    grep -q -E -- "$text" "$tmp/err" || { echo "amrun_check: FAIL: no line of stderr matches /$text/" >&2; exit 1; }
done || fail=1
printf '%s\n' "$output_texts" | while IFS= read -r text; do
    [ -z "$text" ] && continue
    cat "$tmp/out" "$tmp/err" | grep -q -F -- "$text" ||
        { echo "amrun_check: FAIL: \"$text\" neither on stdout nor on stderr" >&2; exit 1; }
done || fail=1
printf '%s\n' "$not_output_texts" | while IFS= read -r text; do
    [ -z "$text" ] && continue
    if cat "$tmp/out" "$tmp/err" | grep -q -F -- "$text"; then
        echo "amrun_check: FAIL: \"$text\" in the output" >&2; exit 1
    fi
done || fail=1

leftover=$(am_shm_leftover "$tmp/before")
[ -n "$leftover" ] && complain "left in /dev/shm: $leftover"

[ $fail -eq 0 ] && echo "amrun_check: PASS"
exit $fail
