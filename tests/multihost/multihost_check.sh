#!/bin/sh
# Runs a job across emulated hosts (scripts/multihost.sh) under tests/shm/amrun_check.sh and
# checks, beyond what amrun_check checks (status, output, time, /dev/shm clean):
#   --min-link-bytes N   every host's link carried at least N bytes each way (the job's traffic
#                        between hosts went over the emulated network, not around it)
#   --min-dropped N      the loss rule dropped at least N packets on every host
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
    esac
    checks="$checks $(printf '%s' "$1" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"
    shift
done
[ $# -gt 0 ] && shift
out=$(mktemp) || exit 2
trap 'rm -f "$out"' EXIT
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
[ $rc -ne 0 ] && exit $rc
exit $fail
