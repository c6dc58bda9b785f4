# bench/run's section 7: the launch under a booted systemd. vpnd runs as systemd/vpnd.service
# (its hardening and all) in a Debian 12 root booted by systemd-nspawn in the client
# namespace, and vpnexec's launch becomes a scope that vpnd asks systemd for over D-Bus
# (StartTransientUnit in the profile's slice, done when systemd's JobRemoved says so). Both
# sides run inside the container, hyperfine too, so they pay the same.
# The root is the booted tests' (.build/test-roots, made by their first run), else one
# debootstrapped here with the same packages (a minute, from the Debian mirror).
# Source after scripts/lib/topology.sh; needs $bin (the release binaries) and $runs.

systemd_root() {
  local root
  for root in .build/test-roots/bookworm-*; do
    [[ -x $root/usr/lib/systemd/systemd && -e $root/usr/lib/x86_64-linux-gnu/libsodium.so.23 ]] && { echo "$root"; return; }
  done
  root=$PWD/.build/test-roots/bench-bookworm
  if [[ ! -x $root/usr/lib/systemd/systemd ]]; then
    rm -rf "$root.partial"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,iproute2,nftables,libsodium23,libnftnl11,libmnl0,libcap2,libsystemd0,libstdc++6 \
      bookworm "$root.partial" http://deb.debian.org/debian >&2
    mv "$root.partial" "$root"
  fi
  echo "$root"
}

# Sets launch_systemd and launch_systemd_bare (ms, means of $runs).
systemd_launch_measure() {
  local root box=$work/systemd etc=$work/systemd/etc nspawn init state
  root=$(systemd_root)
  mkdir -p "$etc/policy.d"
  chmod 755 "$box" "$etc" "$etc/policy.d"
  printf '[profile.bench]\ntunnel.interface = "wg-none"\n' > "$etc/policy.d/10.toml"
  chmod 644 "$etc/policy.d/10.toml"
  # systemd-nspawn --keep-unit makes "payload" and "supervisor" in the cgroup it runs in and
  # leaves them: it runs in a cgroup of this run's (a test's booted container beside it makes
  # them in its runner's cgroup, the same names), removed with them at the end.
  systemd_cgroup=$cgroup_root/vx$tag-nspawn
  mkdir -p "$systemd_cgroup"
  SYSTEMD_NSPAWN_API_VFS_WRITABLE=network SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 \
    sh -c 'echo $$ > "$0/cgroup.procs" && shift && exec "$@"' "$systemd_cgroup" _ \
    systemd-nspawn --register=no --keep-unit -q --console=read-only -D "$root" --volatile=overlay --boot \
      --capability=CAP_NET_ADMIN,CAP_BPF --network-namespace-path=/var/run/netns/"$client" \
      --system-call-filter="landlock_create_ruleset landlock_add_rule landlock_restrict_self fanotify_init fanotify_mark bpf" \
      --bind-ro="$bin/vpnd:/usr/local/bin/vpnd" --bind-ro="$bin/vpnexec:/usr/local/bin/vpnexec" \
      --bind-ro="$bin/vpnctl:/usr/local/bin/vpnctl" --bind-ro="$(command -v hyperfine):/usr/local/bin/hyperfine" \
      --bind-ro="$PWD/systemd/vpnd.service:/etc/systemd/system/vpnd.service" \
      --bind-ro="$PWD/systemd/vpn.slice:/etc/systemd/system/vpn.slice" --bind-ro="$etc:/etc/vpnexec" \
      --bind="$box:/bench" > "$box/console.log" 2>&1 &
  nspawn=$!
  systemd_nspawn=$nspawn
  for _ in $(seq 1 300); do
    # The container's PID 1 is systemd-nspawn's child once it has exec'd systemd.
    init=$(ps -o pid=,comm= --ppid "$nspawn" 2>/dev/null | awk '$2 == "systemd" { print $1; exit }' || true)
    [[ -n $init ]] && break
    sleep 0.1
  done
  [[ -n $init ]] || { cat "$box/console.log" >&2; echo "systemd-nspawn did not start the container" >&2; return 1; }
  systemd_init=$init
  # Section 1 exports VPNEXEC_SOCKET for its own vpnd: in the container, vpnexec asks the unit's.
  inside() { nsenter -t "$systemd_init" -a env -u VPNEXEC_SOCKET "$@"; }
  for _ in $(seq 1 60); do
    state=$(inside systemctl is-system-running --wait 2>/dev/null || true)
    [[ $state == running || $state == degraded ]] && break
    sleep 1
  done
  [[ $state == running || $state == degraded ]] || { cat "$box/console.log" >&2; echo "the container did not boot ($state)" >&2; return 1; }
  inside systemctl start vpnd.service || { inside journalctl -u vpnd.service --no-pager -o cat >&2; return 1; }
  # A launch is a scope of systemd's in the profile's slice: checked once, before measuring.
  inside sh -c 'vpnexec -p bench -- sh -c "cat /proc/self/cgroup"' | grep -q 'vpn-bench.slice/vpnexec-bench-.*\.scope' \
    || { echo "vpnexec did not launch into a scope of the profile's slice" >&2; inside journalctl -u vpnd.service --no-pager -o cat >&2; return 1; }
  inside hyperfine -N --warmup 20 --runs "$runs" --export-json /bench/launch.json \
    "/usr/local/bin/vpnexec -p bench -- /bin/true" "/bin/true" >&2
  read -r launch_systemd launch_systemd_bare < <(mean "$box/launch.json")
  cp "$box/launch.json" "$results/launch-systemd.json"
  systemd_launch_down
}

systemd_launch_down() {
  # Also from the EXIT trap, where a failure must not keep the rest of the cleanup from running.
  local -; set +e
  [[ -n ${systemd_nspawn:-} ]] || return 0
  [[ -n ${systemd_init:-} ]] && nsenter -t "$systemd_init" -a systemctl poweroff 2>/dev/null
  for _ in $(seq 1 300); do kill -0 "$systemd_nspawn" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$systemd_nspawn" 2>/dev/null; then kill -9 ${systemd_init:-} "$systemd_nspawn" 2>/dev/null; fi
  wait "$systemd_nspawn" 2>/dev/null
  [[ -d ${systemd_cgroup:-} ]] && find "$systemd_cgroup" -depth -type d -exec rmdir {} \; 2>/dev/null
  systemd_nspawn=
}
