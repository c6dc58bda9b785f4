import Nftables
import Policy

/// Cgroups of a profile (or the profile parent) whose socket programs the kernel lacks
/// (`RuntimeFacts.unguardedCgroups`: another program attached there or above without
/// BPF_F_ALLOW_MULTI keeps vpnd's out, or someone detached them and they could not be put
/// back). A socket made there is born without the profile's mark and would leave direct:
/// the killswitch, which matches marks, would not see it. While any such cgroup exists, an
/// output chain drops what a socket of one of them sends without a mark of ours, anywhere
/// but loopback, and counts it: the profile is held, not leaking. The chain is there only
/// then, as every packet the host sends passes it; the socket's cgroup is a lookup at its
/// level (the packet's own socket, no search). Marked packets are the killswitch's.
/// `socket cgroupv2` is not allowed in postrouting, hence output: nothing of ours re-routes
/// a packet after it, so its interface here is final for what this chain decides.
public enum UnguardedRules {
    static let chain = "unguarded"
    static let dropChain = "unguarded_drop"
    public static let counter = "unguarded"

    /// Which unguarded cgroups are held: a profile's (its slice, a joined unit) and the
    /// parent. Not the root (its path guard refuses sockets of unknown cgroups; holding it
    /// would hold the host) nor the bypass slice (without its programs its processes are
    /// unmarked: direct in app mode, the system profile's in system mode, never a leak).
    public static func held(_ unguarded: [String: UnguardedCgroup], policy: Policy, parent: String) -> [String: UInt64] {
        let bypass = ExecutableRules.bypassCgroup(parent: parent)
        return unguarded.filter { !$0.key.isEmpty && $0.key != bypass }.mapValues(\.id)
    }

    /// Whether `path` is held: it or a cgroup above it is among `held`.
    public static func holds(_ path: String, in held: some Collection<String>) -> Bool {
        held.contains { path == $0 || path.hasPrefix($0 + "/") }
    }

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !facts.unguardedCgroups.isEmpty else { return }
        let maps = CgroupMaps(facts.unguardedCgroups.sorted { $0.key < $1.key }.map { ($0.key, $0.value, .goto(dropChain)) }, name: "unguarded_level_")
        table.sets += maps.sets
        table.counters.append(NftCounter(name: counter, comment: "packets of cgroups without their socket programs, dropped"))
        table.chains += [
            NftChain(name: chain, base: NftBaseChain(kind: .filter, hook: .output, priority: NftBaseChain.filter), rules: [
                NftRule([.markMatch(mask: policy.routing.markMask, value: 0, negated: true), .verdict(.accept)]),
                NftRule([.toLoopback, .verdict(.accept)]),
            ] + maps.lookups(prefix: [])),
            NftChain(name: dropChain, rules: [NftRule([.namedCounter(counter), .verdict(.drop)], comment: "a member without its socket programs")]),
        ]
    }
}
