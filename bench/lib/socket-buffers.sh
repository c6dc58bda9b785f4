# Shared by bench/run (section 4), bench/member-cost and bench/wireguard: the tunnel daemons'
# UDP sockets get the buffers wireguard-go sets itself since 0.0.20230223 (7 MiB each way).
# Debian 12's wireguard-go (0.0.20220316) takes the kernel's default, 208 KiB, and its server
# end then drops 5 to 7% of a TCP flow's datagrams (UdpRcvbufErrors): every flow, ours and the
# plain one, is then bound by those losses and by the congestion control's answer to them (BBR
# resent 13% of the bytes), not by what its packets cost. The defaults are the host's (no
# namespace has its own), so they are set for the run and put back on exit. Call
# socket_buffers_up before tunnel_up: a socket takes the default when it is made.

# The host's own values stay in this file until they are put back: a run killed before its
# restore leaves it, and the next run takes the host's values from it, not the 7 MiB the
# killed run left set.
buffers_file=/run/vpnexec-bench-socket-buffers

socket_buffers_up() {
  [[ -s $buffers_file ]] || sysctl -n net.core.rmem_default net.core.wmem_default net.core.rmem_max net.core.wmem_max | paste -sd' ' > "$buffers_file"
  saved_buffers=$(cat "$buffers_file")
  local size=$((7 << 20))
  sysctl -qw net.core.rmem_max=$size net.core.wmem_max=$size
  sysctl -qw net.core.rmem_default=$size net.core.wmem_default=$size
}

socket_buffers_restore() {
  [[ -n ${saved_buffers:-} ]] || return 0
  local rmem wmem rmem_max wmem_max
  read -r rmem wmem rmem_max wmem_max <<< "$saved_buffers"
  sysctl -qw net.core.rmem_default=$rmem net.core.wmem_default=$wmem
  sysctl -qw net.core.rmem_max=$rmem_max net.core.wmem_max=$wmem_max
  rm -f "$buffers_file"
}
