#!/bin/sh
# A launcher that dies while its job starts must leave nothing in /dev/shm, and a closed
# stdout/stderr must not kill amrun itself.
#   amrun_launcher_death.sh kill AMRUN PROG      amrun -n 4 PROG ok, killed with SIGKILL 0-30 ms
#                                                after its start (ten times); its ranks die
#                                                through PR_SET_PDEATHSIG
#   amrun_launcher_death.sh sigpipe AMRUN PROG   amrun -n 2 PROG ok 2>&1 | true (eight times):
#                                                amrun must not die of SIGPIPE
# Both fail if the job region ever had a name in /dev/shm (seen in amrun's /proc/PID/maps) or
# if an am-* object that was not there before stays after the jobs are gone.
set -u
mode=$1
amrun=$2
prog=$3

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/shm_objects.sh"
am_shm_list >"$tmp/before"
fail=0
complain() { echo "amrun_launcher_death: FAIL: $*" >&2; fail=1; }

# Waits (at most 5 s) until no process has TAG in its command line: the job's ranks are gone.
wait_gone() {
    n=0
    while pgrep -f -- "$1" >/dev/null; do
        n=$((n + 1))
        if [ $n -ge 500 ]; then complain "processes of $1 still alive after 5 s"; return; fi
        sleep 0.01
    done
}

# Records a /dev/shm name mapped by process PID, if any.
note_named_region() {
    grep -o '/dev/shm/am-[0-9a-f]*' "/proc/$1/maps" 2>/dev/null | head -n 1 >>"$tmp/named"
}

case "$mode" in
    kill)
        i=0
        for delay in 0 0.002 0.004 0.006 0.008 0.010 0.013 0.017 0.022 0.030; do
            i=$((i + 1))
            tag="launcher-death-$$-$i"
            "$amrun" -n 4 "$prog" ok "$tag" >/dev/null 2>&1 &
            pid=$!
            sleep "$delay"
            note_named_region "$pid"
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            wait_gone "$tag"
        done
        ;;
    sigpipe)
        i=0
        while [ $i -lt 8 ]; do
            i=$((i + 1))
            tag="launcher-sigpipe-$$-$i"
            ( "$amrun" -n 2 "$prog" ok "$tag" 2>&1; echo $? >"$tmp/rc" ) | true
            wait_gone "$tag"
            rc=$(cat "$tmp/rc")
            if [ "$rc" -gt 128 ]; then
                complain "run $i: amrun died of signal $((rc - 128)) (exit status $rc)"
            fi
        done
        ;;
    *)
        echo "usage: amrun_launcher_death.sh kill|sigpipe AMRUN PROG" >&2
        exit 2
        ;;
esac

if [ -s "$tmp/named" ]; then
    complain "the job region had a name in /dev/shm: $(sort -u "$tmp/named" | tr '\n' ' ')"
fi
leftover=$(am_shm_leftover "$tmp/before")
[ -n "$leftover" ] && complain "left in /dev/shm: $leftover"

[ $fail -eq 0 ] && echo "amrun_launcher_death: $mode: PASS"
exit $fail
