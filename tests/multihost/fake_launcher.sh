#!/usr/bin/env bash
# A stand-in for Open MPI's mpirun in the tests of scripts/multihost.sh itself
# (multihost_script_test.sh): skips mpirun's options, runs the program once in the background
# (one "rank", in host 0's namespaces), and waits for it. Environment:
#   FAKE_LAUNCHER_LOG FILE     lines "started", then "term" when it gets SIGTERM and "cleaned"
#                              once its clean-up (below) is done
#   FAKE_LAUNCHER_LINGER S     stay S seconds after the program ended (as mpirun can, waiting on
#                              its daemons)
#   FAKE_LAUNCHER_CLEANUP S    on SIGTERM: end the program, take S seconds to "clean up", exit 143
# It waits without starting processes of its own (bash's read -t on a fifo), so that the only
# process running the program is the program's.
set -u
log=${FAKE_LAUNCHER_LOG:-/dev/null}
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n | --hostfile | --map-by) shift 2 ;;
    --mca) shift 3 ;;
    --oversubscribe) shift ;;
    *) break ;;
  esac
done

fifo=$(mktemp -u)
mkfifo "$fifo"
exec 9<>"$fifo"
rm -f "$fifo"
pause() { read -r -t "$1" -u 9 || true; }

terminating=0
on_term() {
  [[ $terminating -eq 0 ]] || return 0
  terminating=1
  echo term >>"$log"
  kill -TERM "$prog" 2>/dev/null
  pause "${FAKE_LAUNCHER_CLEANUP:-0}"
  echo cleaned >>"$log"
  exit 143
}

"$@" &
prog=$!
trap on_term TERM
echo started >>"$log"
wait "$prog"
rc=$?
pause "${FAKE_LAUNCHER_LINGER:-0}"
exit $rc
