# Shared by bench/run and bench/member-cost: the ruleset of the 64-profile goal. 63 more
# profiles (on interfaces that do not exist) beside the bench profile, whose domain sets hold
# 10,000 addresses (198.18.0.0/15, the benchmarking range) as its DNS proxy would have learned
# them. Source after scripts/lib/topology.sh (it uses $work, $client, $wgc, pids, vpnd_up).

ruleset64_files() {
  for i in $(seq 1 63); do printf '[profile.p%d]\ntunnel.interface = "wgb%d"\n\n' "$i" "$i"; done > "$work/big.toml"
  printf '[profile.bench]\ntunnel.interface = "%s"\ndns = ["10.99.1.1"]\nbypass.domains = ["*.bypass.example"]\nroute.domains = ["*.route.example"]\n' "$wgc" >> "$work/big.toml"
  python3 - > "$work/elements.nft" <<'PY'
for name, start in (("bypass_dns4_bench", 0), ("route_dns4_bench", 5000)):
    addresses = ", ".join(f"198.18.{(i >> 8) & 255}.{i & 255} timeout 1h" for i in range(start, start + 5000))
    print(f"add element inet vpnexec {name} {{ {addresses} }}")
PY
}

# vpnd running with it (from no vpnd): a restarted vpnd reads the elements back from the
# kernel and gives each its route, as it does for what its proxy learned (10,000 more routes
# in the profile's tables).
ruleset64_up() {
  cp "$work/big.toml" "$work/policy.d/10.toml"
  vpnd_up
  inns "$client" nft -f "$work/elements.nft"
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'
  vpnd_up
  until [[ $(inns "$client" ip -4 route show table all proto 119 | wc -l) -ge 10000 ]]; do sleep 0.1; done
}
