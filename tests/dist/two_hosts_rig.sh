#!/usr/bin/env bash
# tests/dist/two_hosts_rig.sh - two simulated machines on this one, for data-parallel runs across "hosts" (sourced by
# tests/dist/two_hosts.sh; usable by hand: `source tests/dist/two_hosts_rig.sh; rig_up; rig_mpirun -np 2 ...; rig_down`).
#
# Each host is a network namespace (its own interfaces, addresses, routes and TCP stack) whose processes also get their
# own UTS namespace (their own host name): host0 at 10.231.N.1 and host1 at 10.231.N.2, joined by one veth pair, so
# every byte between the two ranks crosses a (virtual) network link that the tests can cut or slow down. Nothing else
# is addressed: the only routes are that /24 and loopback, and every address used is one given here.
#
# How OpenMPI is told what a user tells it across two machines:
#   --hostfile H            the two hosts' addresses, one slot each (as a hostfile of real machines)
#   --mca plm_rsh_agent A   how mpirun starts its daemon on a remote host: normally ssh; here A, the launch agent
#                           below, which runs the daemon's command inside that host's namespaces (ssh's role)
#   --mca btl tcp,self      ranks talk over TCP only (no shared memory: the two "hosts" share a kernel)
#   --mca btl_tcp_if_include, oob_tcp_if_include 10.231.N.0/24    the link between the hosts, for MPI's data and for
#                           its control channel (mpirun <-> the remote daemon)
#   --mca oob_tcp_keepalive_time 3, _intvl 1, _probes 3    how soon mpirun and a remote daemon notice that the other
#                           is unreachable (~6 s). OpenMPI's defaults (300 s, 20 s, 9) leave a job whose link is cut
#                           waiting ~8 minutes after the ranks have given up: mpirun cannot tell the remote daemon to end
#   --bind-to none          only because the two "hosts" share the cores: each daemon would bind its rank to "its"
#                           core 0, the same core (measured: 2-host steps/s fell to one core's)
# mpirun itself runs on host0 (inside its namespaces), as on the first machine of an allocation.
# Needs root (ip netns, unshare), iproute2 and OpenMPI; rig_up says which is missing.

RIG_NET=${RIG_NET:-$((20 + $$ % 200))}  # the third octet: two rigs at once do not collide
RIG_NS0=dlrig${RIG_NET}h0
RIG_NS1=dlrig${RIG_NET}h1
RIG_ADDR0=10.231.$RIG_NET.1
RIG_ADDR1=10.231.$RIG_NET.2
RIG_DIR=${RIG_DIR:-/tmp/dlrig$RIG_NET}

# rig_up: make the two hosts, the hostfile and the launch agent. Returns 77 (ctest's "skipped") when this machine
# cannot make them, saying why.
rig_up() {
  if [ "$(id -u)" != 0 ]; then echo "rig: needs root (network namespaces)"; return 77; fi
  for t in ip unshare mpirun; do
    command -v $t > /dev/null || { echo "rig: '$t' is not installed (scripts/setup.sh installs iproute2 and openmpi-bin)"; return 77; }
  done
  if ! ip netns add "$RIG_NS0" 2> "$RIG_DIR.err"; then echo "rig: ip netns add failed: $(cat "$RIG_DIR.err")"; return 77; fi
  ip netns add "$RIG_NS1" &&
    ip link add dlrv${RIG_NET}a netns "$RIG_NS0" type veth peer name dlrv${RIG_NET}b netns "$RIG_NS1" &&
    ip -n "$RIG_NS0" addr add "$RIG_ADDR0/24" dev dlrv${RIG_NET}a && ip -n "$RIG_NS1" addr add "$RIG_ADDR1/24" dev dlrv${RIG_NET}b &&
    for ns in "$RIG_NS0" "$RIG_NS1"; do ip -n "$ns" link set lo up || return 1; done &&
    rig_link up || { echo "rig: could not wire the two namespaces"; rig_down; return 77; }
  mkdir -p "$RIG_DIR"
  printf '%s slots=1\n%s slots=1\n' "$RIG_ADDR0" "$RIG_ADDR1" > "$RIG_DIR/hostfile"
  # the launch agent, in place of ssh: `agent HOST COMMAND...` runs COMMAND in HOST's namespaces, with its host name
  cat > "$RIG_DIR/agent" << EOF
#!/usr/bin/env bash
case "\$1" in
  $RIG_ADDR0) ns=$RIG_NS0 name=host0 ;;
  $RIG_ADDR1) ns=$RIG_NS1 name=host1 ;;
  *) echo "rig agent: unknown host '\$1'" >&2; exit 255 ;;
esac
shift
exec ip netns exec "\$ns" unshare --uts bash -c 'hostname "\$0"; exec bash -c "\$*"' "\$name" "\$@"
EOF
  chmod +x "$RIG_DIR/agent"
}

# rig_link up|down: the veth link between the hosts (down: a cut cable; both ends, as a switch port going dark)
rig_link() {
  ip -n "$RIG_NS0" link set dlrv${RIG_NET}a "$1" && ip -n "$RIG_NS1" link set dlrv${RIG_NET}b "$1"
}

# rig_slow RATE | rig_slow off: a slow link (a token-bucket rate limit on both ends; this kernel has no netem delay)
rig_slow() {
  local pair ns dev
  for pair in "$RIG_NS0:dlrv${RIG_NET}a" "$RIG_NS1:dlrv${RIG_NET}b"; do
    ns=${pair%%:*} dev=${pair#*:}
    if [ "$1" = off ]; then ip netns exec "$ns" tc qdisc del dev "$dev" root 2> /dev/null
    else ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$1" burst 64kbit latency 500ms || return 1; fi
  done
}

# rig_mpirun ARGS...: mpirun on host0 with the options above (extra ARGS as for mpirun: -np 2 -x VAR prog args), ended
# after RIG_TIMEOUT seconds (600) if it has not ended by itself; ThreadSanitizer's settings travel to both hosts when
# set (scripts/sanitize.sh tsan-dist)
rig_mpirun() {
  timeout --kill-after=10 "${RIG_TIMEOUT:-600}" ip netns exec "$RIG_NS0" unshare --uts bash -c 'hostname host0; exec "$@"' rig \
    mpirun --allow-run-as-root --hostfile "$RIG_DIR/hostfile" --mca plm_rsh_agent "$RIG_DIR/agent" \
    --mca btl tcp,self --mca btl_tcp_if_include "10.231.$RIG_NET.0/24" --mca oob_tcp_if_include "10.231.$RIG_NET.0/24" \
    --mca oob_tcp_keepalive_time 3 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3 --bind-to none \
    -x OMP_NUM_THREADS=1 -x OPENBLAS_CORETYPE ${TSAN_OPTIONS:+-x TSAN_OPTIONS} ${OMP_TOOL_LIBRARIES:+-x OMP_TOOL_LIBRARIES} "$@"
}

rig_down() {
  ip netns del "$RIG_NS0" 2> /dev/null
  ip netns del "$RIG_NS1" 2> /dev/null
  rm -rf "$RIG_DIR" "$RIG_DIR.err"
  return 0
}
