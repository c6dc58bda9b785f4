# bench/run's section 6: a container beside client A, a network namespace ("box") behind a
# veth of the client namespace, as nspawn --network-veth and a runtime's veth make one.
# Source after scripts/lib/topology.sh and bench/lib/side-by-side.sh; call container_up
# after tunnel_up.
#   box (10.98.0.2, eth0) -- veth -- client (10.98.0.1, $boxhost), forwarding on
# Its flow into the tunnel goes either way of two:
#   a member: `vpnexec -p bench -- nsenter --net=box iperf3 ...`, vpnd routes the namespace
#     (found from the member's socket; prerouting marks what arrives on the veth's host end,
#     the profile's table routes it, masquerade gives it the tunnel's address);
#   plain: no vpnd, a rule for the box's network into a table whose route is the tunnel, and
#     a masquerade out of the tunnel: what an admin would write for this one container.

box=vx${tag}k boxhost=vx${tag}kh

container_up() {
  extra_namespaces+=("$box")
  ip netns add "$box"
  inns "$box" ip link set lo up
  ip link add "$boxhost" netns "$client" type veth peer name eth0 netns "$box"
  inns "$client" ip addr add 10.98.0.1/24 dev "$boxhost"
  inns "$client" ip link set "$boxhost" up
  inns "$box" ip addr add 10.98.0.2/24 dev eth0
  inns "$box" ip link set eth0 up
  inns "$box" ip route add default via 10.98.0.1
  inns "$client" sysctl -qw net.ipv4.ip_forward=1
}

# The plain way in and out of it.
container_plain_up() {
  inns "$client" ip route add 192.0.2.80/32 dev "$wgc" src 10.99.1.2 table 7998
  inns "$client" ip rule add from 10.98.0.0/24 lookup 7998 priority 7998
  inns "$client" nft -f - <<NFT
table ip bench_box {
  chain out { type nat hook postrouting priority srcnat; oifname "$wgc" ip saddr 10.98.0.0/24 masquerade; }
}
NFT
}
container_plain_down() {
  inns "$client" nft delete table ip bench_box
  inns "$client" ip rule del priority 7998
  inns "$client" ip route flush table 7998
}

# Until vpnd has routed the box (a member's socket there, from a process that stays until
# vpnd found it; the namespace is known by its id after that).
container_routed() {
  # nsenter and vpnexec exec what they run: $! is the python process itself.
  nsenter --net=/var/run/netns/"$client" -- "$bin/vpnexec" -p bench -- nsenter --net=/var/run/netns/"$box" \
    python3 -c 'import socket, time; s = socket.socket(); time.sleep(30)' &
  local finder=$! tries=0
  until "$bin/vpnctl" status --json | python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin).get("routedNamespaces") else 1)'; do
    sleep 0.1
    (( ++tries < 100 )) || { kill "$finder"; echo "vpnd did not route the container in 10 s" >&2; return 1; }
  done
  kill "$finder"; wait "$finder" 2>/dev/null || true
}
