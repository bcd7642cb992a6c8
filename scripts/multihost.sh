#!/usr/bin/env bash
# Emulated hosts on one machine: runs an MPI job across H "hosts", each a Linux network namespace
# (its own interface, address and routing) with its own UTS namespace (its own hostname, so MPI
# sees H nodes), joined by veth pairs to a bridge that lives in a namespace of its own. The MPI
# launcher starts in host 0 and reaches the others over TCP through a remote-launch agent that
# enters the host's namespaces instead of using ssh. Ranks on one host share memory (am's node
# rings, MPI's shared-memory transport); ranks on different hosts talk over TCP.
#
#   scripts/multihost.sh [options] -- program [args...]
#
#   --hosts H           emulated hosts (default 2)
#   --ppn N             ranks per host (default 2)
#   --mpi openmpi|mpich the launcher's MPI (default openmpi); must be the program's MPI
#   --mpirun PATH       the launcher (default: mpirun for openmpi, mpiexec.hydra for mpich)
#   --loss PCT          drop PCT % (0 to 100) of the packets arriving at each host (iptables,
#                       statistic match)
#   --rate RATE         limit each host's sending rate (tc tbf, e.g. 100mbit)
#   --cut HOST:SECONDS  take host HOST's link down SECONDS after the launch (ip link set down)
#   --timeout SECONDS   kill the job if it runs longer (default 600, more than 0); status 124
#   --mpi-arg ARG       one more launcher argument (repeatable), before the program
#   --linger SECONDS    after the job ended, wait up to this long for the program's processes
#                       on every host to exit by themselves (default 0); those still running
#                       then are reported ("still running") and killed
#   --launcher-grace S  once every process of the program has ended, give the launcher up to S
#                       seconds to end too, then end it (reported): Open MPI's mpirun can wait
#                       for minutes on a daemon behind a cut link after the ranks are gone. Also
#                       the launcher's time to clean up after SIGTERM when the script is
#                       interrupted (default then 5 s)
# The script prints when every process of the program had ended ("ended … s after the launch").
#   --check             only check that namespaces can be made here; status 0, or 77 with why
#
# The job's exit status is the script's. Status 2 (and a line naming the option and its value)
# for a usage error: every option is checked before anything is made. Status 77 (and a line
# saying why) when namespaces cannot be created here (not root, no CAP_SYS_ADMIN, no iproute2):
# callers report the run as skipped. Interrupted (SIGINT, SIGTERM: status 130, 143), it sends the
# launcher SIGTERM and gives it the grace to clean up (SIGKILL after). Everything the script
# creates (namespaces, mounts, its run directory, the processes left in its namespaces, the
# --cut timer, Open MPI's session directories and shared-memory files, which it keeps in
# directories of the run's own: $run_dir/tmp and /dev/shm/multihost.$tag) is removed when it
# ends, also when interrupted. Every run has its own tag (its pid and a random nonce) naming its
# namespaces. It uses only the addresses it assigns inside its own namespaces (10.77.0.0/24;
# invisible outside them), so several runs may go at once. Delay cannot be emulated: these
# kernels have no netem queueing discipline.
set -euo pipefail

hosts=2
ppn=2
mpi=openmpi
mpirun=""
loss=""
rate=""
cut=""
timeout_s=600
check_only=0
mpi_args=()
linger=0
launcher_grace=""

die() {
  echo "multihost.sh: $*" >&2
  exit 2
}
skip() {
  echo "multihost.sh: SKIPPED: $*" >&2
  exit 77
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --check) check_only=1; shift; continue ;;
    --) shift; break ;;
    --hosts | --ppn | --mpi | --mpirun | --loss | --rate | --cut | --timeout | --mpi-arg | \
      --linger | --launcher-grace)
      [[ $# -ge 2 ]] || die "$1: a value is missing" ;;
    *) die "unknown option '$1' (see the comment at the top of the script)" ;;
  esac
  case "$1" in
    --hosts) hosts=$2 ;;
    --ppn) ppn=$2 ;;
    --mpi) mpi=$2 ;;
    --mpirun) mpirun=$2 ;;
    --loss) loss=$2 ;;
    --rate) rate=$2 ;;
    --cut) cut=$2 ;;
    --timeout) timeout_s=$2 ;;
    --mpi-arg) mpi_args+=("$2") ;;
    --linger) linger=$2 ;;
    --launcher-grace) launcher_grace=$2 ;;
  esac
  shift 2
done

# Every option is checked here, before anything is made.
number='^[0-9]+(\.[0-9]+)?$'
# at_most VALUE LIMIT: a number within a limit (both match $number)
at_most() { awk "BEGIN { exit !($1 <= $2) }"; }
# Decimal without leading zeros: bash arithmetic reads 010 as octal, Open MPI's ppr:010 as 10.
[[ "$hosts" =~ ^[1-9][0-9]*$ && $hosts -le 200 ]] || die "--hosts $hosts: 1 to 200"
[[ "$ppn" =~ ^[1-9][0-9]*$ ]] || die "--ppn $ppn: a positive count"
[[ "$mpi" == openmpi || "$mpi" == mpich ]] || die "--mpi $mpi: openmpi or mpich"
if [[ -n "$loss" ]]; then
  [[ "$loss" =~ $number ]] && at_most "$loss" 100 || die "--loss $loss: a percentage, 0 to 100"
fi
if [[ -n "$rate" ]]; then
  [[ "${rate,,}" =~ ^[0-9]+(\.[0-9]+)?([kmgt]i?)?(bit|bps)?$ ]] ||
    die "--rate $rate: a rate as tc writes it (e.g. 100mbit)"
fi
if [[ -n "$cut" ]]; then
  [[ "$cut" =~ ^([0-9]+):([0-9]+(\.[0-9]+)?)$ ]] || die "--cut $cut: HOST:SECONDS"
  cut_host=${BASH_REMATCH[1]}
  cut_after=${BASH_REMATCH[2]}
  [[ $cut_host -lt $hosts ]] || die "--cut $cut: host $cut_host of $hosts"
fi
[[ "$timeout_s" =~ $number ]] && ! at_most "$timeout_s" 0 ||
  die "--timeout $timeout_s: a number of seconds, more than 0"
[[ "$linger" =~ $number ]] || die "--linger $linger: a number of seconds"
if [[ -n "$launcher_grace" ]]; then
  [[ "$launcher_grace" =~ $number ]] || die "--launcher-grace $launcher_grace: a number of seconds"
fi
if [[ $check_only -eq 0 ]]; then
  [[ $# -gt 0 ]] || die "no program given (scripts/multihost.sh [options] -- program [args...])"
  if [[ -z "$mpirun" && "$mpi" == openmpi ]]; then mpirun=mpirun; fi
  if [[ -z "$mpirun" ]]; then mpirun=mpiexec.hydra; fi
  command -v "$mpirun" >/dev/null || die "--mpirun $mpirun: not found"
  command -v "$1" >/dev/null || die "program $1: not found"
fi

# --- can namespaces be made here? ------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || skip "needs root (network and UTS namespaces)"
for tool in ip nsenter unshare; do
  command -v $tool >/dev/null || skip "'$tool' not found (Debian: iproute2, util-linux)"
done
if [[ -n "$loss" ]] && ! command -v iptables >/dev/null; then
  skip "--loss needs iptables (Debian: iptables)"
fi
if [[ -n "$rate" ]] && ! command -v tc >/dev/null; then
  skip "--rate needs tc (Debian: iproute2)"
fi

# The run's tag names its namespaces and directories: the pid alone can repeat (a later run, or
# one in another pid namespace), so a random nonce too.
nonce=$(</proc/sys/kernel/random/uuid)
tag="am$$-${nonce:0:8}"
run_dir=/run/am-multihost/$tag
shm_dir=/dev/shm/multihost.$tag
sw="${tag}sw"
ns() { echo "${tag}h$1"; }
addr() { echo "10.77.0.$(($1 + 1))"; }
job_pid=""
watch_pid=""
cut_pid=""

# Milliseconds since the epoch; SECONDS (a number) in milliseconds.
ms_now() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }
ms_of() { awk "BEGIN { printf \"%d\", $1 * 1000 }"; }
# Whether process PID runs (not ended, nor a zombie not yet collected).
alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ "${stat%% *}" != Z ]]
}
# Waits until process PID has ended or SECONDS passed, polling; fails if it still runs.
wait_gone() {
  local end=$(($(ms_now) + $(ms_of "$2")))
  while alive "$1"; do
    [[ $(ms_now) -lt $end ]] || return 1
    sleep 0.05
  done
}

# What crossed each host's link (and what the loss rule dropped): evidence that the job's traffic
# between hosts went over TCP, printed when the job ends.
report_links() {
  local h rx tx dropped
  for ((h = 0; h < hosts; h++)); do
    [[ -e /run/netns/$(ns $h) ]] || continue
    rx=$(ip netns exec "$(ns $h)" cat /sys/class/net/eth0/statistics/rx_bytes 2>/dev/null || echo '?')
    tx=$(ip netns exec "$(ns $h)" cat /sys/class/net/eth0/statistics/tx_bytes 2>/dev/null || echo '?')
    dropped=""
    if [[ -n "$loss" ]]; then
      dropped=", loss rule dropped $(ip netns exec "$(ns $h)" iptables -L INPUT -v -n -x 2>/dev/null |
        awk '/statistic/ { print $1; exit }') packets"
    fi
    echo "multihost.sh: host $h (amhost$h, $(addr $h)): eth0 received $rx bytes, sent $tx bytes$dropped" >&2
  done
}

# A background helper of this script (the rank watcher, the --cut timer): ended and collected.
stop_helper() {
  [[ -n "$1" ]] || return 0
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# Interrupted while the job runs: the launcher gets SIGTERM (timeout passes it on) and the grace
# to end its ranks and daemons and remove their files, then SIGKILL (as its whole group).
end_launcher() {
  local grace=${launcher_grace:-5}
  alive "$job_pid" || return 0
  kill -TERM "$job_pid" 2>/dev/null || true
  if ! wait_gone "$job_pid" "$grace"; then
    echo "multihost.sh: the launcher still ran ${grace} s after SIGTERM: killed it" >&2
  fi
}

cleanup() {
  local status=$?
  # Once: and a second Ctrl-C during the launcher's grace must not cut the cleanup short
  # (namespaces, mounts and this run's /dev/shm directory would stay).
  trap - EXIT
  trap '' INT TERM
  set +e  # one step failing must not skip the others
  stop_helper "$cut_pid"
  stop_helper "$watch_pid"
  if [[ -n "$job_pid" ]]; then end_launcher; fi
  if [[ $check_only -eq 0 && -d "$run_dir" ]]; then report_links; fi
  local h pids
  for ((h = 0; h < hosts; h++)); do
    pids=$(ip netns pids "$(ns $h)" 2>/dev/null || true)
    if [[ -n "$pids" ]]; then kill -KILL $pids 2>/dev/null || true; fi
  done
  if [[ -n "$job_pid" ]]; then kill -KILL -- -"$job_pid" 2>/dev/null || true; fi
  for ((h = 0; h < hosts; h++)); do
    if [[ -e "$run_dir/h$h.uts" ]]; then umount "$run_dir/h$h.uts" 2>/dev/null || true; fi
    ip netns del "$(ns $h)" 2>/dev/null || true
  done
  ip netns del "$sw" 2>/dev/null || true
  # Open MPI's shared-memory files of a job that was killed (its daemons remove them otherwise).
  local left
  left=$(ls -A "$shm_dir" 2>/dev/null | tr '\n' ' ' || true)
  if [[ -n "$left" ]]; then
    echo "multihost.sh: removed the shared-memory files the job left: $left" >&2
  fi
  rm -rf "$run_dir" "$shm_dir"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

make_hosts() {
  mkdir -p "$run_dir/tmp"
  ip netns add "$sw" 2>/dev/null || skip "cannot create a network namespace (ip netns add failed)"
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  local h
  for ((h = 0; h < hosts; h++)); do
    ip netns add "$(ns $h)"
    # Made in the bridge's namespace: no name in the machine's own (where it could clash).
    ip -n "$sw" link add "h$h" type veth peer name eth0 netns "$(ns $h)"
    ip -n "$sw" link set "h$h" master br0 up
    ip -n "$(ns $h)" addr add "$(addr $h)/24" dev eth0
    ip -n "$(ns $h)" link set eth0 up
    ip -n "$(ns $h)" link set lo up
    touch "$run_dir/h$h.uts"
    unshare --uts="$run_dir/h$h.uts" hostname "amhost$h" ||
      skip "cannot create a UTS namespace (unshare --uts failed)"
    degrade "$h"
  done
}

# The link's impairments, applied inside the host's namespace (never to the machine's own).
degrade() {
  local h=$1
  if [[ -n "$loss" ]]; then
    ip netns exec "$(ns $h)" iptables -A INPUT -i eth0 -m statistic --mode random \
      --probability "$(awk "BEGIN { print $loss / 100 }")" -j DROP ||
      skip "iptables cannot add the loss rule in a namespace here"
  fi
  if [[ -n "$rate" ]]; then
    ip netns exec "$(ns $h)" tc qdisc add dev eth0 root tbf rate "$rate" burst 64kb latency 200ms
  fi
}

# The remote-launch agent: called as ssh would be (options, then the host, then the command);
# runs the command in that host's namespaces.
write_agent() {
  local agent=$run_dir/agent h
  {
    echo '#!/usr/bin/env bash'
    echo 'while [[ "$1" == -* ]]; do shift; done'
    echo 'host=$1; shift'
    echo 'case "$host" in'
    for ((h = 0; h < hosts; h++)); do
      echo "  $(addr $h)|amhost$h) n=$h ;;"
    done
    echo '  *) echo "multihost agent: unknown host $host" >&2; exit 255 ;;'
    echo 'esac'
    echo "exec nsenter --net=/run/netns/${tag}h\$n --uts=$run_dir/h\$n.uts -- /bin/sh -c \"\$*\""
  } >"$agent"
  chmod +x "$agent"
  echo "$agent"
}

# Open MPI's launcher checks its links to the other hosts' daemons with TCP keepalives after
# 6 s of silence, 3 probes 1 s apart: without them, mpirun waits minutes for a daemon behind a
# cut link (its default: 300 s) after the ranks already ended the job. Later than am's own
# heartbeats (5 s), so am names the lost ranks first.
ompi_keepalive=(--mca oob_tcp_keepalive_time 6 --mca oob_tcp_keepalive_intvl 1
                --mca oob_tcp_keepalive_probes 3)

launch_command() {
  local agent=$1 np=$((hosts * ppn)) h
  if [[ "$mpi" == openmpi ]]; then
    local hostfile=$run_dir/hostfile
    for ((h = 0; h < hosts; h++)); do echo "$(addr $h) slots=$ppn"; done >"$hostfile"
    # Open MPI's session directories and shared-memory files in directories of this run's own
    # (by default /tmp/ompi.<host>.<uid> and /dev/shm/vader_segment.<host>.*, named by the
    # hostnames every run shares): what a killed job leaves is this run's to remove.
    mkdir -p "$shm_dir"
    cmd=("$mpirun" -n "$np" --hostfile "$hostfile" --map-by "ppr:$ppn:node"
         --oversubscribe --mca plm_rsh_agent "$agent" --mca pml ob1 --mca btl self,vader,tcp
         --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24
         --mca btl_vader_backing_directory "$shm_dir" --mca orte_tmpdir_base "$run_dir/tmp"
         "${ompi_keepalive[@]}")
  else
    local list=""
    for ((h = 0; h < hosts; h++)); do list+="${list:+,}$(addr $h):$ppn"; done
    # Debian's MPICH runs over UCX, whose shared-memory transports would reach the other
    # "hosts" (they are one machine): TCP only, on the emulated link. (With UCX_TLS=tcp,self,
    # MPICH 4.0.2 jobs of 2 x 2 ranks hung in MPI_Finalize, one rank flushing a UCX endpoint.)
    cmd=("$mpirun" -n "$np" -hosts "$list" -launcher ssh
         -launcher-exec "$agent" -iface eth0 -genv UCX_TLS tcp -genv UCX_NET_DEVICES eth0)
  fi
}

# The program's processes still running in host h's namespace.
program_pids() {
  local h=$1 pid
  for pid in $(ip netns pids "$(ns $h)" 2>/dev/null); do
    [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$program" ]] && echo "$pid"
  done
}

# After the job: every host's processes of the program must end by themselves (a host cut off
# from the launcher included) within the linger time; those that do not are named.
check_leftovers() {
  local h left deadline=$(($(ms_now) + $(ms_of "$linger")))
  while :; do
    left=0
    for ((h = 0; h < hosts; h++)); do
      [[ -n "$(program_pids $h)" ]] && left=1
    done
    [[ $left -eq 0 || $(ms_now) -ge $deadline ]] && break
    sleep 0.2
  done
  for ((h = 0; h < hosts; h++)); do
    local pids
    pids=$(program_pids $h | tr '\n' ' ')
    if [[ -n "$pids" ]]; then
      echo "multihost.sh: host $h: processes of the program still running ${linger} s after the job ended: $pids" >&2
    fi
  done
}

now() { date +%s.%N; }

# Runs a helper (watch_ranks, cut_later) in the background; on SIGTERM (stop_helper) it ends
# with the nap it may be in.
helper() {
  nap_pid=""
  trap '[[ -z "$nap_pid" ]] || kill "$nap_pid" 2>/dev/null; exit 0' TERM
  "$@"
}
nap() {
  sleep "$1" &
  nap_pid=$!
  wait "$nap_pid" || true
}

# In the background while the job runs: notes when every process of the program on every host
# has ended (after at least one was seen), and with --launcher-grace ends a launcher that
# outlives them by that long (as soon as the launcher ends, the wait does).
watch_ranks() {
  local job=$1 start=$2 seen=0 h any ended
  while alive "$job"; do
    any=0
    for ((h = 0; h < hosts; h++)); do
      [[ -n "$(program_pids $h)" ]] && any=1
    done
    if [[ $any -eq 1 ]]; then
      seen=1
    elif [[ $seen -eq 1 ]]; then
      ended=$(now)
      echo "multihost.sh: every process of the program ended $(awk "BEGIN { printf \"%.1f\", $ended - $start }") s after the launch" >&2
      [[ -n "$launcher_grace" ]] || return 0
      if ! wait_gone "$job" "$launcher_grace"; then
        echo "multihost.sh: the launcher still ran ${launcher_grace} s after every rank had ended: ended it" >&2
        kill -KILL -- -"$job" 2>/dev/null || true
      fi
      return 0
    fi
    nap 0.1
  done
  # The launcher ended first (or in the same tenth of a second).
  if [[ $seen -eq 1 ]]; then
    echo "multihost.sh: every process of the program ended $(awk "BEGIN { printf \"%.1f\", $(now) - $start }") s after the launch" >&2
  fi
}

cut_later() {
  nap "$cut_after"
  ip -n "$(ns "$cut_host")" link set eth0 down
  echo "multihost.sh: host $cut_host's link cut at ${cut_after} s" >&2
}

make_hosts
if [[ $check_only -eq 1 ]]; then
  echo "multihost.sh: namespaces can be created here"
  exit 0
fi
program=$(readlink -f "$(command -v "$1" || echo "$1")")
agent=$(write_agent)
launch_command "$agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "multihost.sh: run $tag, $hosts hosts x $ppn ranks: ${cmd[*]} $*" >&2
# timeout's own SIGTERM gets the same grace as an interruption's (at least 0.1 s: 0 is never).
kill_after=$(awk "BEGIN { g = ${launcher_grace:-5}; print (g < 0.1 ? 0.1 : g) }")
set +e
setsid nsenter --net=/run/netns/"$(ns 0)" --uts="$run_dir/h0.uts" -- \
  timeout --kill-after="$kill_after" "$timeout_s" "${cmd[@]}" "${mpi_args[@]}" "$@" &
job_pid=$!
helper watch_ranks "$job_pid" "$(now)" &
watch_pid=$!
if [[ -n "$cut" ]]; then
  helper cut_later &
  cut_pid=$!
fi
wait "$job_pid"
status=$?
wait "$watch_pid" 2>/dev/null
watch_pid=""
set -e
job_pid=""
check_leftovers
exit $status
