#!/usr/bin/env bash
# Tests of scripts/multihost.sh itself: its option checks, its helpers and its clean-up when
# interrupted (issue 36, item 5). Most use tests/multihost/fake_launcher.sh as the launcher (no
# MPI: fast and deterministic); `interrupt_mpi` runs a real Open MPI job.
#   multihost_script_test.sh usage               every bad option: status 2, a line naming the
#                                                option and its value, nothing made (no namespace
#                                                tool is called: they are stubs here)
#   multihost_script_test.sh grace_ends_early    --launcher-grace ends as soon as the launcher does
#   multihost_script_test.sh cut_ends_with_run   the --cut timer does not outlive the run
#   multihost_script_test.sh interrupt_grace     SIGINT: the launcher gets SIGTERM and the time to
#                                                clean up; the script then exits 130, early
#   multihost_script_test.sh same_pid            two runs whose scripts have the same pid (each
#                                                pid 1 of its own pid namespace) at once
#   multihost_script_test.sh interrupt_mpi MULTIHOST_OPTIONS... -- PROGRAM ARGS...
#                                                SIGINT during an Open MPI job: status 130, none
#                                                of the job's files left in /dev/shm, no process
#                                                of the run left
# MULTIHOST_SH overrides the script tested (e.g. an older version). Where namespaces cannot be
# made (not root), the cases that need them exit 77 with the reason (skipped); `usage` never.
set -u
here=$(cd "$(dirname "$0")" && pwd)
multihost=${MULTIHOST_SH:-$here/../../scripts/multihost.sh}
fake=$here/fake_launcher.sh
case_name=${1:-}
shift || true
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
complain() { echo "multihost_script_test: FAIL: $*"; fail=1; }
ms_now() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }

# Every process of a run carries the run's mark in its environment: those still running.
mark=AM_MULTIHOST_TEST_MARK=$(</proc/sys/kernel/random/uuid)
marked() { grep -l -s -a -F -- "$mark" /proc/[0-9]*/environ | cut -d/ -f3; }
# Fails if a process of the run outlived it (and ends those, so a failing run leaves nothing).
no_survivors() {
  local pids
  pids=$(marked | tr '\n' ' ')
  [[ -z "$pids" ]] && return 0
  complain "processes of the run outlived it:"
  for pid in $pids; do ps -o pid=,args= -p "$pid"; done
  kill -KILL $pids 2>/dev/null
}
# interrupt PID: SIGINT to the run, waited for; sets the caller's rc and elapsed (ms after the
# signal) and shows its output.
interrupt() {
  local t0
  t0=$(ms_now)
  kill -INT "$1"
  wait "$1"
  rc=$?
  elapsed=$(($(ms_now) - t0))
  cat "$tmp/out"
}

need_namespaces() {
  local reason rc
  reason=$("$multihost" --check 2>&1)
  rc=$?
  if [[ $rc -eq 77 ]]; then echo "$reason"; exit 77; fi
  if [[ $rc -ne 0 ]]; then echo "multihost_script_test: --check: $reason"; exit 1; fi
}
# Waits up to 20 s for TEXT in FILE.
await() {
  local i
  for ((i = 0; i < 200; i++)); do
    grep -q -F -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

usage() {
  local stubs=$tmp/stubs t rc args expect
  mkdir "$stubs"
  for t in ip nsenter unshare iptables tc hostname mount umount setsid timeout; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\nexit 1\n' "$t" "$stubs" >"$stubs/$t"
    chmod +x "$stubs/$t"
  done
  # Each case: the options, then the text the error must contain.
  while IFS='|' read -r args expect; do
    [[ -z "$args" ]] && continue
    rm -f "$stubs/calls"
    # shellcheck disable=SC2086 # the options are words
    PATH=$stubs:$PATH "$multihost" --mpirun /bin/true $args >"$tmp/out" 2>&1
    rc=$?
    if [[ $rc -ne 2 ]]; then complain "$args: status $rc, expected 2 ($(head -c 300 "$tmp/out"))"; fi
    grep -q -F -- "$expect" "$tmp/out" || complain "$args: no \"$expect\" in: $(cat "$tmp/out")"
    if [[ -s "$stubs/calls" ]]; then
      complain "$args: made something before the error: $(tr '\n' ';' <"$stubs/calls")"
    fi
  done <<'CASES'
--loss 200 -- true|--loss 200: a percentage, 0 to 100
--loss 100.5 -- true|--loss 100.5:
--loss -1 -- true|--loss -1:
--loss abc -- true|--loss abc:
--timeout abc -- true|--timeout abc: a number of seconds
--timeout 0 -- true|--timeout 0:
--linger abc -- true|--linger abc: a number of seconds
--launcher-grace abc -- true|--launcher-grace abc: a number of seconds
--launcher-grace -1 -- true|--launcher-grace -1:
--rate fast -- true|--rate fast:
--hosts 0 -- true|--hosts 0:
--hosts 010 -- true|--hosts 010:
--ppn 08 -- true|--ppn 08:
--ppn x -- true|--ppn x:
--mpi lam -- true|--mpi lam:
--cut 2:1 -- true|--cut 2:1: host 2 of 2
--cut 1 -- true|--cut 1: HOST:SECONDS
--hosts|--hosts: a value is missing
--mpirun /nonexistent/mpirun -- true|--mpirun /nonexistent/mpirun: not found
-- /nonexistent/program|program /nonexistent/program: not found
--frobnicate 1 -- true|unknown option '--frobnicate'
CASES
  # Good values pass the checks: the script goes on to make the namespaces (a stub that fails
  # here, status 77) or says it is not root (77).
  rm -f "$stubs/calls"
  PATH=$stubs:$PATH "$multihost" --mpirun /bin/true --hosts 2 --loss 0 --loss 100 --loss 2.5 \
    --timeout 0.5 --linger 1.5 --launcher-grace 0 --rate 100mbit --cut 1:2.5 -- true \
    >"$tmp/out" 2>&1
  rc=$?
  [[ $rc -eq 77 ]] || complain "good options: status $rc, expected 77 (stubs): $(cat "$tmp/out")"
}

grace_ends_early() {
  need_namespaces
  local start rc elapsed
  start=$(ms_now)
  FAKE_LAUNCHER_LINGER=0.5 "$multihost" --hosts 1 --ppn 1 --mpirun "$fake" --launcher-grace 20 \
    --timeout 60 -- sleep 0.5 >"$tmp/out" 2>&1
  rc=$?
  elapsed=$(($(ms_now) - start))
  cat "$tmp/out"
  echo "--- exit $rc after $elapsed ms"
  [[ $rc -eq 0 ]] || complain "status $rc, expected 0"
  grep -q 'every process of the program ended' "$tmp/out" || complain "the rank was not seen ending"
  if grep -q 'still ran' "$tmp/out"; then complain "the launcher was ended, but it ended by itself"; fi
  # The rank ends at 0.5 s, the launcher 0.5 s later: the run ends then, not 20 s after the rank.
  [[ $elapsed -lt 10000 ]] || complain "took $elapsed ms: the grace was waited out (20 s)"
}

cut_ends_with_run() {
  need_namespaces
  local rc
  env "$mark" "$multihost" --hosts 2 --ppn 1 --mpirun "$fake" --cut 1:30 -- sleep 0.5 \
    >"$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  [[ $rc -eq 0 ]] || complain "status $rc, expected 0"
  no_survivors
}

interrupt_grace() {
  need_namespaces
  local pid rc elapsed log=$tmp/launcher.log
  env --default-signal=INT "$mark" FAKE_LAUNCHER_LOG="$log" FAKE_LAUNCHER_CLEANUP=0.5 \
    "$multihost" --hosts 2 --ppn 1 --mpirun "$fake" --cut 1:60 --launcher-grace 20 \
    --timeout 60 -- sleep 60 >"$tmp/out" 2>&1 &
  pid=$!
  await "$log" started || complain "the launcher did not start"
  interrupt "$pid"
  echo "--- launcher's log: $(tr '\n' ' ' <"$log"); exit $rc $elapsed ms after SIGINT"
  [[ $rc -eq 130 ]] || complain "status $rc, expected 130"
  grep -q term "$log" || complain "the launcher got no SIGTERM"
  grep -q cleaned "$log" || complain "the launcher was not given the time to clean up (0.5 s)"
  # Its clean-up takes 0.5 s: the run ends then, not when the grace (20 s) is over.
  [[ $elapsed -lt 10000 ]] || complain "took $elapsed ms after SIGINT: the grace was waited out"
  no_survivors
}

same_pid() {
  need_namespaces
  command -v unshare >/dev/null || { echo "needs unshare"; exit 77; }
  local pid rc_a rc_b
  # Run A (its script is pid 1 of its own pid namespace) is still running when run B (pid 1
  # too) makes its namespaces and ends: A's program waits for B (at most 20 s).
  unshare --pid --fork --mount-proc "$multihost" --hosts 1 --ppn 1 --mpirun "$fake" \
    -- sh -c "i=0; until [ -e '$tmp/b_done' ] || [ \$i -ge 400 ]; do sleep 0.05; i=\$((i + 1)); done" \
    >"$tmp/a" 2>&1 &
  pid=$!
  await "$tmp/a" "hosts x" || complain "run A did not start"
  unshare --pid --fork --mount-proc "$multihost" --hosts 1 --ppn 1 --mpirun "$fake" \
    -- true >"$tmp/b" 2>&1
  rc_b=$?
  touch "$tmp/b_done"
  wait "$pid"
  rc_a=$?
  echo "--- run A (exit $rc_a):"; cat "$tmp/a"
  echo "--- run B (exit $rc_b):"; cat "$tmp/b"
  [[ $rc_a -eq 0 ]] || complain "run A: status $rc_a, expected 0"
  [[ $rc_b -eq 0 ]] || complain "run B: status $rc_b, expected 0"
}

# The files in /dev/shm the run's processes have mapped (and not unlinked).
mapped_shm() {
  local pid
  for pid in $(marked); do
    awk '$6 ~ /^\/dev\/shm\// && $7 == "" { print $6 }' "/proc/$pid/maps" 2>/dev/null
  done | sort -u
}

interrupt_mpi() {
  need_namespaces
  local pid rc i files="" elapsed f
  env --default-signal=INT "$mark" "$multihost" "$@" >"$tmp/out" 2>&1 &
  pid=$!
  # Started: every rank (2 hosts x 2) has its Open MPI shared-memory segment.
  for ((i = 0; i < 300; i++)); do
    files=$(mapped_shm)
    [[ $(grep -c vader_segment <<<"$files") -ge 4 ]] && break
    sleep 0.1
  done
  echo "--- the run's files in /dev/shm:"; echo "$files"
  [[ $(grep -c vader_segment <<<"$files") -ge 4 ]] || complain "the job's ranks did not start"
  interrupt "$pid"
  echo "--- exit $rc, $elapsed ms after SIGINT"
  [[ $rc -eq 130 ]] || complain "status $rc, expected 130"
  for f in $files; do
    if [[ -e "$f" ]]; then
      complain "left in /dev/shm: $f"
      rm -f "$f"  # this run's own
    fi
  done
  no_survivors
}

case "$case_name" in
  usage | grace_ends_early | cut_ends_with_run | interrupt_grace | same_pid | interrupt_mpi)
    "$case_name" "$@" ;;
  *) echo "usage: multihost_script_test.sh CASE (see the comment at the top)" >&2; exit 2 ;;
esac
[[ $fail -eq 0 ]] && echo "multihost_script_test: $case_name: PASS"
exit $fail
