#!/bin/sh
# Runs a job across emulated hosts (scripts/multihost.sh) under tests/shm/amrun_check.sh and
# checks, beyond what amrun_check checks (status, output, time, /dev/shm clean):
#   --min-link-bytes N   every host's link carried at least N bytes each way (the job's traffic
#                        between hosts went over the emulated network, not around it)
#   --min-dropped N      the loss rule dropped at least N packets on every host
#   --rank-stderr REGEX N  the ranks' own stderr, kept per rank on their hosts (Open MPI's
#                        --output-filename, written by each host's daemon: it arrives even from
#                        a host cut off from the launcher), matches REGEX for exactly N ranks
#   --ranks-ended-within S  every process of the program (on every host) had ended at most S
#                        seconds after the launch (multihost.sh's own measurement)
#   Also fails when multihost.sh reports processes of the program still running after the job.
#   multihost_check.sh [--min-link-bytes N] [--min-dropped N] CHECK_OPTIONS... --
#                      MULTIHOST_OPTIONS... -- PROGRAM ARGS...
# Where namespaces cannot be created, exits 77 with the reason (CTest: SKIP_RETURN_CODE 77, the
# test is reported as skipped, never passed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
multihost=$here/../../scripts/multihost.sh
check=$here/../shm/amrun_check.sh
min_bytes=0
min_dropped=0
rank_regex=""
rank_count=0
ended_within=""
reason=$("$multihost" --check 2>&1)
rc=$?
if [ $rc -eq 77 ]; then echo "$reason"; exit 77; fi
if [ $rc -ne 0 ]; then echo "multihost_check: $reason"; exit 1; fi

# This script's options may stand anywhere before the first --; the rest go to amrun_check.
checks=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case "$1" in
        --min-link-bytes) min_bytes=$2; shift 2; continue ;;
        --min-dropped) min_dropped=$2; shift 2; continue ;;
        --rank-stderr) rank_regex=$2; rank_count=$3; shift 3; continue ;;
        --ranks-ended-within) ended_within=$2; shift 2; continue ;;
    esac
    checks="$checks $(printf '%s' "$1" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"
    shift
done
[ $# -gt 0 ] && shift
out=$(mktemp) || exit 2
ranks_dir=$(mktemp -d) || exit 2
trap 'rm -rf "$out" "$ranks_dir"' EXIT
if [ -n "$rank_regex" ]; then
    set -- --mpi-arg --output-filename --mpi-arg "$ranks_dir" "$@"
fi
eval "set -- $checks -- \"\$multihost\" \"\$@\""
"$check" "$@" >"$out" 2>&1
rc=$?
cat "$out"
if grep -q 'multihost.sh: SKIPPED' "$out"; then exit 77; fi
fail=0
links=$(grep -c 'eth0 received' "$out")
if [ "$min_bytes" -gt 0 ]; then
    [ "$links" -gt 0 ] || { echo "multihost_check: FAIL: no link report"; fail=1; }
    grep 'eth0 received' "$out" | while read -r line; do
        rx=$(echo "$line" | sed -n 's/.*received \([0-9]*\) bytes.*/\1/p')
        tx=$(echo "$line" | sed -n 's/.*sent \([0-9]*\) bytes.*/\1/p')
        if [ -z "$rx" ] || [ -z "$tx" ] || [ "$rx" -lt "$min_bytes" ] || [ "$tx" -lt "$min_bytes" ]; then
            echo "multihost_check: FAIL: link carried less than $min_bytes bytes: $line"
            exit 1
        fi
    done || fail=1
fi
if [ "$min_dropped" -gt 0 ]; then
    grep 'eth0 received' "$out" | while read -r line; do
        n=$(echo "$line" | sed -n 's/.*dropped \([0-9]*\) packets.*/\1/p')
        if [ -z "$n" ] || [ "$n" -lt "$min_dropped" ]; then
            echo "multihost_check: FAIL: the loss rule dropped fewer than $min_dropped packets: $line"
            exit 1
        fi
    done || fail=1
fi
if grep -q 'multihost.sh: host .* still running' "$out"; then
    echo "multihost_check: FAIL: processes of the program outlived the job"
    fail=1
fi
if [ -n "$ended_within" ]; then
    t=$(sed -n 's/.*every process of the program ended \([0-9.]*\) s after the launch.*/\1/p' "$out" | head -1)
    if [ -z "$t" ] || ! awk "BEGIN { exit !($t <= $ended_within) }"; then
        echo "multihost_check: FAIL: the program's processes ended ${t:-never seen} s after the launch, limit $ended_within s"
        fail=1
    fi
fi
if [ -n "$rank_regex" ]; then
    n=0
    for f in "$ranks_dir"/*/rank.*/stderr; do
        [ -f "$f" ] || continue
        echo "--- $(basename "$(dirname "$f")") stderr (kept on its host):"
        cat "$f"
        if grep -q -E -- "$rank_regex" "$f"; then n=$((n + 1)); fi
    done
    if [ "$n" -ne "$rank_count" ]; then
        echo "multihost_check: FAIL: \"$rank_regex\" in $n ranks' stderr, expected $rank_count"
        fail=1
    fi
fi
[ $rc -ne 0 ] && exit $rc
exit $fail
