#!/bin/sh
# A job that fails with AM_TRACE set must leave an existing trace byte for byte as it was and
# no temporary file next to it (issue 36, item 8). For jobs that end the test's own process,
# such as a failing mpi job (MPI_Abort); tests/trace/trace_file_test.cpp covers threads and shm
# in process.
#   failed_job_check.sh TRACE_FILE -- COMMAND...
# Writes a small valid trace to TRACE_FILE, runs COMMAND with AM_TRACE=TRACE_FILE, and fails
# unless COMMAND fails, TRACE_FILE is unchanged and no file TRACE_FILE.* exists.
set -u
[ $# -ge 3 ] && [ "$2" = "--" ] || { echo "usage: $0 TRACE_FILE -- COMMAND..." >&2; exit 2; }
trace=$1
shift 2
dir=$(dirname "$trace")
base=$(basename "$trace")
want=$(mktemp) || exit 2
trap 'rm -f "$want"' EXIT
mkdir -p "$dir" || exit 2
rm -f "$trace" "$trace".*
printf '{"traceEvents":[\n{"name":"an earlier good trace","ph":"i","s":"t","ts":1,"pid":0,"tid":1}\n]}\n' >"$trace"
cp "$trace" "$want" || exit 2

AM_TRACE=$trace "$@"
rc=$?

fail=0
if [ $rc -eq 0 ]; then echo "failed_job_check: FAIL: the job succeeded, it should fail" >&2; fail=1; fi
if ! cmp -s "$trace" "$want"; then
    echo "failed_job_check: FAIL: the failed job changed $trace ($(wc -c <"$trace") bytes now)" >&2
    fail=1
fi
strays=$(ls -A "$dir" | grep -F -- "$base." )
if [ -n "$strays" ]; then
    echo "failed_job_check: FAIL: files left next to $trace: $strays" >&2
    fail=1
fi
rm -f "$trace" "$trace".*
[ $fail -eq 0 ] && echo "failed_job_check: ok (exit $rc, trace unchanged, nothing left next to it)"
exit $fail
