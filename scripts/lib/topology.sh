# Shared by scripts/demo and bench/run: the test network of the integration tests, in
# bash. Source it, then call topology_up, tunnel_up, reporter_up; cleanup runs on exit.
#   client (198.51.100.2, 2001:db8:1::2) -- wan (router) -- server (203.0.113.2, 2001:db8:2::2)
#   services on the server's loopback: 192.0.2.80, 2001:db8:80::80
#   tunnel: wireguard-go on both ends, client 10.99.1.2 / fd99:1::2, server 10.99.1.1 / fd99:1::1

tag=${tag:-x$$}
work=$(mktemp -d /tmp/vpnexec-$tag.XXXX); chmod 755 "$work"
client=vx${tag}c wan=vx${tag}w server=vx${tag}s wgc=vx${tag}t wgs=vx${tag}v uplink=vx${tag}u
cgroup_root=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-" && $(i + 1) == "cgroup2") { print $5; exit } }' /proc/self/mountinfo)
cgroup_parent=vx$tag.slice
pids=()
# Namespaces and tunnels a script adds to the three (bench/lib/side-by-side.sh), for cleanup.
extra_namespaces=() extra_tunnels=()

inns() { local ns=$1; shift; nsenter --net=/var/run/netns/"$ns" -- "$@"; }
# Background processes are started by nsenter itself (no function, no subshell), so that
# $! is the process to stop.
bg() { local ns=$1; shift; nsenter --net=/var/run/netns/"$ns" -- "$@" & pids+=($!); }

cleanup() {
  set +e
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  # vpnd's socket programs outlive it (the root cgroup's path guard outlives the cgroups
  # of this run): removed as an admin would, before the namespace goes.
  [[ -n ${bin:-} && -x $bin/vpnd ]] && inns "$client" "$bin/vpnd" --cleanup --socket "$work/cleanup.sock" 2>/dev/null
  # and its lock, named after the namespace.
  rm -f /run/vpnexec/netns-"$(stat -Lc %i /var/run/netns/"$client" 2>/dev/null)".lock
  for ns in "$client" "$wan" "$server" "${extra_namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  for tunnel in "$wgc" "$wgs" "${extra_tunnels[@]}"; do rm -f /var/run/wireguard/"$tunnel".sock; done
  if [[ -d $cgroup_root/$cgroup_parent ]]; then
    find "$cgroup_root/$cgroup_parent" -depth -type d -exec rmdir {} \; 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

topology_up() {
  for ns in "$client" "$wan" "$server"; do ip netns add "$ns"; inns "$ns" ip link set lo up; done
  ip link add "$uplink" netns "$client" type veth peer name vx${tag}a netns "$wan"
  ip link add vx${tag}b netns "$server" type veth peer name vx${tag}d netns "$wan"
  local spec
  for spec in "$client $uplink 198.51.100.2/24 2001:db8:1::2/64" "$wan vx${tag}a 198.51.100.1/24 2001:db8:1::1/64" \
              "$wan vx${tag}d 203.0.113.1/24 2001:db8:2::1/64" "$server vx${tag}b 203.0.113.2/24 2001:db8:2::2/64"; do
    set -- $spec
    inns "$1" ip addr add "$3" dev "$2"
    inns "$1" ip addr add "$4" dev "$2" nodad
    inns "$1" ip link set "$2" up
  done
  inns "$client" ip route add default via 198.51.100.1
  inns "$client" ip -6 route add default via 2001:db8:1::1
  inns "$server" ip route add default via 203.0.113.1
  inns "$server" ip -6 route add default via 2001:db8:2::1
  inns "$server" ip addr add 192.0.2.80/32 dev lo
  inns "$server" ip addr add 2001:db8:80::80/128 dev lo nodad
  inns "$wan" ip route add 192.0.2.80/32 via 203.0.113.2
  inns "$wan" ip -6 route add 2001:db8:80::80/128 via 2001:db8:2::2
  inns "$wan" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
}

tunnel_up() {
  umask 077; wg genkey > "$work/c.key"; wg genkey > "$work/s.key"; umask 022
  bg "$server" wireguard-go -f "$wgs" >/dev/null 2>&1
  bg "$client" wireguard-go -f "$wgc" >/dev/null 2>&1
  local s
  for s in "$wgs" "$wgc"; do until [[ -S /var/run/wireguard/$s.sock ]]; do sleep 0.05; done; done
  wg set "$wgs" private-key "$work/s.key" listen-port 51821 peer "$(wg pubkey < "$work/c.key")" allowed-ips 10.99.1.2/32,fd99:1::2/128
  wg set "$wgc" private-key "$work/c.key" peer "$(wg pubkey < "$work/s.key")" endpoint 203.0.113.2:51821 allowed-ips 0.0.0.0/0,::/0
  inns "$server" ip addr add 10.99.1.1/24 dev "$wgs"
  inns "$server" ip addr add fd99:1::1/64 dev "$wgs" nodad
  inns "$server" ip link set "$wgs" up
  inns "$client" ip addr add 10.99.1.2/24 dev "$wgc"
  inns "$client" ip addr add fd99:1::2/64 dev "$wgc" nodad
  inns "$client" ip link set "$wgc" up
}

reporter_up() {
  cp "$(dirname "${BASH_SOURCE[0]}")"/reporter.py "$(dirname "${BASH_SOURCE[0]}")"/probe.py "$work/"
  chmod 644 "$work"/*.py
  bg "$server" python3 "$work/reporter.py" "$work/seen.log" 8080 192.0.2.80 2001:db8:80::80
  until inns "$server" ss -ltnH | grep -q ':8080'; do sleep 0.05; done
}

# vpnd in the client namespace with a policy directory of this run; waits until it answers.
vpnd_up() {
  export VPNEXEC_SOCKET=$work/vpnd.sock
  bg "$client" "$bin/vpnd" --policy-dir "$work/policy.d" --cgroup-parent "$cgroup_parent" "$@" 2> "$work/vpnd.log"
  until "$bin/vpnctl" status >/dev/null 2>&1; do sleep 0.05; done
}

# The same tunnel made of our own engine: `vpn-server` (binary $1) as the listening peer in
# "server" (with NAT), and the client side's wg-quick file in $work/client.conf, for a
# profile's `tunnel.wireguard` (or a second vpn-server when $2 is "client").
ours_tunnel_up() {
  local bin=$1 mode=${2:-}
  umask 077; wg genkey > "$work/c.key"; wg genkey > "$work/s.key"
  cat > "$work/server.conf" <<CONF
[Interface]
PrivateKey = $(cat "$work/s.key")
ListenPort = 51821
Address = 10.99.1.1/24, fd99:1::1/64
[Peer]
PublicKey = $(wg pubkey < "$work/c.key")
AllowedIPs = 10.99.1.2/32, fd99:1::2/128
CONF
  cat > "$work/client.conf" <<CONF
[Interface]
PrivateKey = $(cat "$work/c.key")
Address = 10.99.1.2/24, fd99:1::2/64
[Peer]
PublicKey = $(wg pubkey < "$work/s.key")
Endpoint = 203.0.113.2:51821
AllowedIPs = ${client_allowed:-0.0.0.0/0, ::/0}
CONF
  umask 022
  # $ours_flags: extra vpn-server flags for both ends (the bench compares --no-offloads).
  bg "$server" "$bin" --config "$work/server.conf" --interface "$wgs" ${ours_flags:-} 2>> "$work/vpn-server.log"
  until [[ -S /var/run/wireguard/$wgs.sock ]]; do sleep 0.05; done
  if [[ $mode == client ]]; then
    bg "$client" "$bin" --config "$work/client.conf" --interface "$wgc" ${ours_flags:-} 2>> "$work/vpn-server.log"
    until [[ -S /var/run/wireguard/$wgc.sock ]]; do sleep 0.05; done
  fi
}
