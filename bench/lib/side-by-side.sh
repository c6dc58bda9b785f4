# bench/run's section 5: a second client beside the first, with a tunnel of its own to the
# same server, so that two flows can run at the same time on the same cores. Source after
# scripts/lib/topology.sh and call side_by_side_up after topology_up and tunnel_up.
#   client (A, 198.51.100.2) --\
#                               wan -- server (203.0.113.2: wireguard-go on 51821 and 51822)
#   clientb (B, 192.0.2.130) --/
# B's tunnel: $wgb (10.99.2.2) to the server's $wgs2 (10.99.2.1). Both clients' sides of
# their tunnels (wireguard-go, iperf3) share CPU 0 and the server's share CPU 1 (taskset), so
# that whatever the machine does to a core in a second, it does to both flows.

clientb=vx${tag}e wgb=vx${tag}y wgs2=vx${tag}z

side_by_side_up() {
  extra_namespaces+=("$clientb") extra_tunnels+=("$wgb" "$wgs2")
  ip netns add "$clientb"
  inns "$clientb" ip link set lo up
  ip link add vx${tag}f netns "$clientb" type veth peer name vx${tag}g netns "$wan"
  inns "$clientb" ip addr add 192.0.2.130/26 dev vx${tag}f
  inns "$clientb" ip link set vx${tag}f up
  inns "$wan" ip addr add 192.0.2.129/26 dev vx${tag}g
  inns "$wan" ip link set vx${tag}g up
  inns "$clientb" ip route add default via 192.0.2.129
  umask 077; wg genkey > "$work/b.key"; wg genkey > "$work/s2.key"; umask 022
  bg "$server" wireguard-go -f "$wgs2" >/dev/null 2>&1
  bg "$clientb" wireguard-go -f "$wgb" >/dev/null 2>&1
  local s
  for s in "$wgs2" "$wgb"; do until [[ -S /var/run/wireguard/$s.sock ]]; do sleep 0.05; done; done
  wg set "$wgs2" private-key "$work/s2.key" listen-port 51822 peer "$(wg pubkey < "$work/b.key")" allowed-ips 10.99.2.2/32
  wg set "$wgb" private-key "$work/b.key" peer "$(wg pubkey < "$work/s2.key")" endpoint 203.0.113.2:51822 allowed-ips 0.0.0.0/0
  inns "$server" ip addr add 10.99.2.1/24 dev "$wgs2"
  inns "$server" ip link set "$wgs2" up
  inns "$clientb" ip addr add 10.99.2.2/24 dev "$wgb"
  inns "$clientb" ip link set "$wgb" up
  inns "$clientb" ip link set "$wgb" txqueuelen "${QLEN:-5000}"
  inns "$clientb" ip route add 192.0.2.80/32 dev "$wgb" src 10.99.2.2
  local port
  for port in 5201 5202; do
    inns "$server" ss -ltnH | grep -q ":$port " || bg "$server" iperf3 -s -B 192.0.2.80 -p "$port" >/dev/null
    until inns "$server" ss -ltnH | grep -q ":$port "; do sleep 0.05; done
  done
  local pid
  for pid in $(pgrep -f "wireguard-go -f ($wgc|$wgb)$"); do taskset -a -p 0x1 "$pid" >/dev/null; done
  for pid in $(pgrep -f "wireguard-go -f ($wgs|$wgs2)$") $(pgrep -f "iperf3 -s -B 192.0.2.80"); do taskset -a -p 0x2 "$pid" >/dev/null; done
}

# One flow from each client at the same time, SECONDS_PER_RUN long; A's iperf3 runs behind
# the command prefix given (vpnexec for a member). Sets side_by_side to "A B" in bits/s.
side_by_side_flows() {
  local seconds=${SECONDS_PER_RUN:-8}
  inns "$clientb" taskset 0x1 iperf3 -c 192.0.2.80 -p 5202 -t "$seconds" -J > "$work/b.json" &
  local other=$!
  inns "$client" taskset 0x1 "$@" iperf3 -c 192.0.2.80 -p 5201 -t "$seconds" -J > "$work/a.json"
  wait "$other"
  side_by_side=$(python3 -c 'import json, sys; print(" ".join(str(json.load(open(f))["end"]["sum_received"]["bits_per_second"]) for f in sys.argv[1:]))' \
    "$work/a.json" "$work/b.json")
}
