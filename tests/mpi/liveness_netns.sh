#!/bin/sh
# Runs COMMAND... in a private network namespace (unshare -n: loopback and a veth pair with
# 10.9.0.1/24 and 10.9.0.2/24) whose firewall drops every UDP datagram, as a site firewall
# would: the heartbeats' reachability probe (src/transport/mpi/liveness_setup.cpp) must fail,
# rank 0 must warn naming the pair, and the job must run without heartbeats, never declaring a
# rank lost. MPI itself talks TCP in the namespace. Exits 77 (skipped) where network
# namespaces or iptables are not available (not root, no CAP_NET_ADMIN).
#   liveness_netns.sh COMMAND...
set -u
if ! unshare -n true 2>/dev/null; then
    echo "liveness_netns: unshare -n is not permitted here: skipped"
    exit 77
fi
command -v iptables >/dev/null 2>&1 || { echo "liveness_netns: no iptables: skipped"; exit 77; }
exec unshare -n sh -c '
    ip link set lo up &&
    ip link add am-v0 type veth peer name am-v1 &&
    ip addr add 10.9.0.1/24 dev am-v0 && ip addr add 10.9.0.2/24 dev am-v1 &&
    ip link set am-v0 up && ip link set am-v1 up || { echo "liveness_netns: no veth: skipped"; exit 77; }
    iptables -A INPUT -p udp -j DROP || { echo "liveness_netns: iptables failed: skipped"; exit 77; }
    # Open MPI looks for an interface with a carrier for its out-of-band messages.
    sleep 0.5
    exec "$@"' liveness_netns "$@"
