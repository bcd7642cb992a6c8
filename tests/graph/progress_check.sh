#!/bin/sh
# am-graph500's progress line (graph/progress.hpp) is shown on a terminal only, and not with
# --quiet nor below SCALE 22 without --progress. The terminal is script(1)'s pseudo-terminal.
#   progress_check.sh AM_GRAPH500
# Exit status 0, 1 on a failed check, 77 (skipped) without script(1).
set -u
prog=$1
command -v script >/dev/null 2>&1 || { echo "progress_check: no script(1) (util-linux)"; exit 77; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
args="--scale 10 --roots 4 --kernel bfs,sssp --validate --transport threads --ranks 2"
fail=0
complain() { echo "progress_check: FAIL: $*" >&2; fail=1; }
cr=$(printf '\r')

# 1. stderr to a file, with --progress: no line drawn there.
"$prog" $args --progress >"$tmp/out" 2>"$tmp/err" || complain "exit status $? (stderr to a file)"
grep -q "$cr" "$tmp/err" && complain "a carriage return in stderr written to a file"
grep -q "elapsed" "$tmp/err" && complain "a progress line in stderr written to a file"
grep -q "bfs root" "$tmp/err" || complain "the per-root lines are missing from stderr"

# On a terminal: what script(1) recorded of the program's output.
on_tty() {
    script -qec "$prog $args $*" "$tmp/tty" >/dev/null 2>&1 || complain "exit status $? ($*)"
}
# 2. --progress: every phase drawn with its elapsed time, the roots counted to the end.
on_tty --progress
for phase in "generate + build CSR  elapsed" "bfs (kernel 1 of 2): roots searched and validated 0/4" \
             "sssp (kernel 2 of 2): roots searched and validated 4/4  elapsed" "remaining ~"; do
    grep -q -F "$phase" "$tmp/tty" || complain "\"$phase\" not shown with --progress"
done
grep -q "$cr" "$tmp/tty" || complain "no carriage return on the terminal"
# 3. --progress --quiet, and 4. SCALE 10 without --progress: nothing.
for opts in "--progress --quiet" ""; do
    on_tty $opts
    grep -q "elapsed" "$tmp/tty" && complain "a progress line with options '$opts'"
done
[ "$fail" = 0 ] && echo "progress_check: passed"
exit $fail
