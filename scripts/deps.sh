#!/usr/bin/env bash
# Makes sure the Debian/Ubuntu packages a task needs are installed: installs them when run as
# root (or with password-less sudo), otherwise prints the exact command and fails.
#   scripts/deps.sh demo|test|ci
#   scripts/deps.sh --list demo|test|ci     prints the packages, installs nothing
# Each set is the previous one and more; the demo's is what the demo's build needs and no
# more. CI proves that (scripts/only_packages.sh): the demo, and the tests' configure, run
# where only their own set is visible.
set -euo pipefail

list=0
if [ "${1:-}" = "--list" ]; then list=1; shift; fi
set_name="${1:-test}"
case "$set_name" in demo|test|ci) ;; *) echo "usage: $0 [--list] demo|test|ci" >&2; exit 2 ;; esac

# demo: am-graph500 (the core, Boost.Context for optimistic handlers, Open MPI for the mpi
# transport).
need="cmake ninja-build g++ make pkg-config libopenmpi-dev openmpi-bin libboost-context-dev"
if [ "$set_name" != demo ]; then
  need="$need libgtest-dev libcereal-dev"          # the test suites (RPC: cereal types)
  need="$need libboost-mpi-dev libboost-graph-parallel-dev"  # the PBGL baseline and its tests
  need="$need python3-matplotlib"                  # the bench checks' plots, bench_report.sh
  need="$need iproute2 iptables"                   # tests/multihost, the liveness netns test
  need="$need valgrind"                            # instruction counts, am.bench.tam.quick
  need="$need ucx-utils"                           # the UCX baseline of am_pingpong, am_flood
  need="$need libucx-dev"                          # the ucx transport and its tests
fi
if [ "$set_name" = ci ]; then
  need="$need clang-format"                        # the format check (.ci/run)
  need="$need spin"                                # scripts/model_check.sh
  need="$need clang-14 libclang-rt-14-dev"         # clang-14: scripts/fuzz.sh (libFuzzer)
  need="$need mpich libmpich-dev"                  # the MPICH build beside Open MPI's (.ci/run)
fi
if [ $list = 1 ]; then echo "$need"; exit 0; fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps: not a Debian/Ubuntu system; make sure these are installed: $need" >&2
  exit 0
fi
missing=""
for p in $need; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "deps: missing packages:$missing" >&2
  echo "deps: install them with:  sudo apt-get install -y$missing" >&2
  exit 1
fi
