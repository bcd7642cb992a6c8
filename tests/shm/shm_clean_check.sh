#!/bin/sh
# /dev/shm hygiene for the whole suite (a CTest fixture around every shm test):
#   shm_clean_check.sh setup STATE   records the am-* objects present before the tests
#   shm_clean_check.sh check STATE   fails if am-* objects not in STATE are left afterwards
set -u
mode=$1
state=$2
list() { ls /dev/shm 2>/dev/null | grep '^am-' | sort; }
case "$mode" in
    setup)
        list >"$state"
        echo "shm_clean_check: $(wc -l <"$state") am-* objects before the tests"
        ;;
    check)
        [ -f "$state" ] || : >"$state"
        tries=0
        while :; do
            leftover=$(list | comm -13 "$state" -)
            [ -z "$leftover" ] && break
            tries=$((tries + 1))
            # A job still starting (e.g. in a concurrent test run) unlinks its name quickly.
            if [ $tries -ge 50 ]; then
                echo "shm_clean_check: FAIL: left in /dev/shm:" >&2
                printf '%s\n' "$leftover" >&2
                exit 1
            fi
            sleep 0.1
        done
        echo "shm_clean_check: PASS: no am-* object left in /dev/shm"
        ;;
    *)
        echo "usage: shm_clean_check.sh setup|check STATE" >&2
        exit 2
        ;;
esac
