#!/usr/bin/env bash
# Makes sure the Debian/Ubuntu packages a task needs are installed: installs them when run as
# root (or with password-less sudo), otherwise prints the exact command and fails.
#   scripts/deps.sh demo|test|ci
set -euo pipefail

need="cmake ninja-build g++ make pkg-config libopenmpi-dev openmpi-bin libboost-context-dev"
case "${1:-test}" in
  demo) ;;
  test) need="$need libgtest-dev libboost-mpi-dev libboost-graph-parallel-dev libcereal-dev"
        need="$need python3-matplotlib"            # am.bench.report.tiny: scripts/bench_report.sh
        need="$need iproute2 iptables" ;;          # tests/multihost: scripts/multihost.sh
  ci)   need="$need libgtest-dev clang-format libboost-mpi-dev libboost-graph-parallel-dev libcereal-dev"
        need="$need iproute2 iptables"             # tests/multihost: scripts/multihost.sh
        need="$need ucx-utils"                     # the UCX baseline of am_pingpong, am_flood
        need="$need valgrind"                      # am.bench.instructions_per_roundtrip
        need="$need clang-14 libclang-rt-14-dev"   # clang-14: scripts/fuzz.sh (libFuzzer)
        need="$need python3-matplotlib"            # am.bench.window.quick: plot_window.py
        need="$need mpich libmpich-dev" ;;         # the MPICH build beside Open MPI's (.ci/run)
  *) echo "usage: $0 demo|test|ci" >&2; exit 2 ;;
esac

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
