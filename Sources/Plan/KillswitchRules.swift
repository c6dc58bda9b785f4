import Nftables
import Policy

/// The killswitch, where the output interface is final (postrouting). A profile's marked
/// packet may leave through its tunnel or loopback, or to the profile's holes (allow_lan,
/// bypass.domains: ExceptionRules); anything else is counted and dropped. These rules live
/// in the kernel, not in the daemon: they hold when vpnd stops or dies and while the tunnel
/// is down or deleted (matching is by interface name, so a re-created tunnel matches again).
/// Routing sends a member's packets nowhere else (RoutingPlan); what this catches is what
/// routing cannot: a socket bound to another interface (SO_BINDTODEVICE, unprivileged since
/// Linux 5.7), and a route someone else put in the profile's table.
///
/// It looks at the packet's mark only, which a member cannot change: a socket that changed
/// its mark has its packets dropped at its cgroup's egress first (SocketProgramPlan), so the
/// mark here is the profile's. Nothing is tracked: no connection state, no NAT, so the
/// kernel keeps no conntrack entry for a member's flow (what a member's TCP flow costs
/// beyond a plain one is this chain and the input chain's first rules, bench/run).
/// Before the holes, the tunnel's own transport is kept from entering it (TransportRules),
/// and an exit's transport is counted in its entry's chain (MultihopRules).
///
/// A mark of ours that no profile holds (a profile removed or renamed by a reload: its
/// members' sockets keep the mark they were born with, which no rule routes any more; a
/// socket that set a stale value itself) is dropped and counted, vpnd running or not: each
/// profile's chain and the bypass mark's end in a verdict of their own, so what falls
/// through the marks' map is no one's.
public enum KillswitchRules {
    static let chain = "killswitch"
    static let unmarkedChain = "unmarked"
    static let bypassChain = "bypassed"
    static let bypassCounter = "bypassed"
    public static let staleCounter = "stale_marks"

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        var egressMarks: [NftElement] = []
        let sources = TransportRules.sourceRules(policy, facts: facts)
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            egressMarks.append(NftElement(key: .mark(profile.mark.value), verdict: .jump(names.egressChain)))
            table.counters += [
                NftCounter(name: names.sentCounter, comment: "profile \(profile.name): packets sent by members"),
                NftCounter(name: names.tunnelCounter, comment: "profile \(profile.name): packets that left through \(profile.tunnel.interfaceName)"),
            ]
            if RoutingPlan.holds(profile, trusted: facts) || profile.killswitch {
                table.counters.append(NftCounter(name: names.droppedCounter, comment: "profile \(profile.name): packets dropped by the killswitch"))
            }
            table.chains.append(NftChain(name: names.egressChain, rules: egress(profile, policy: policy, facts: facts, sources: sources)))
        }
        // The bypass mark: vpn-bypass.slice's sockets, built-in tunnels' own. A tunnel's
        // address leaves through its tunnel only, whatever the mark.
        var bypassed = sources + [NftRule([.verdict(.accept)])]
        if policy.usesBypassSlice {
            table.counters.append(NftCounter(name: bypassCounter, comment: "packets of processes in vpn-bypass.slice (bypass.executables) and tunnels' own sockets, sent direct"))
            bypassed.insert(NftRule([.namedCounter(bypassCounter)]), at: 0)
        }
        egressMarks.append(NftElement(key: .mark(policy.routing.bypassMark), verdict: .jump(bypassChain)))
        table.chains.append(NftChain(name: bypassChain, rules: bypassed))
        table.counters.append(NftCounter(name: staleCounter, comment: "packets with a mark of ours no profile holds (a removed profile's sockets), dropped"))
        table.sets.append(NftSet(name: "egress_marks", key: .mark, data: .verdict, elements: egressMarks))
        // Most of what passes here carries none of our marks: the tunnels' own encrypted
        // packets, one per packet a member sends. They go to their chain by a compare, not
        // by a lookup that would miss in the marks' map.
        var unmarked = TransportRules.unmarkedGuard(policy, facts: facts) + sources
        if let system = policy.systemProfile { unmarked += SystemRules.egress(system, policy: policy) }
        table.chains += [
            NftChain(name: chain, base: NftBaseChain(kind: .filter, hook: .postrouting, priority: NftBaseChain.filter), rules: [
                NftRule([.markMatch(mask: policy.routing.markMask, value: 0, negated: false), .verdict(.goto(unmarkedChain))]),
                NftRule([.markVerdictMap(mask: policy.routing.markMask, map: "egress_marks")]),
                NftRule([.namedCounter(staleCounter), .verdict(.drop)], comment: "a mark of ours that no profile holds"),
            ]),
            NftChain(name: unmarkedChain, rules: unmarked),
        ]
    }

    /// A profile's chain: the sent counter, its hops' transport, its own transport kept out
    /// of it, then the tunnel, loopback and the holes, then the drop.
    /// `sources`: TransportRules.sourceRules, the same for every profile.
    static func egress(_ profile: Profile, policy: Policy, facts: RuntimeFacts, sources: [NftRule]) -> [NftRule] {
        let names = ProfileObjectNames(profile.name)
        let tunnel = profile.tunnel.interfaceName
        // Trusted networks: `disconnect` lifts the drop (members go direct), `block` drops
        // even what a member would send into the tunnel itself (a socket bound to it).
        let action = facts.trustedAction(profile)
        var rules = [NftRule([.namedCounter(names.sentCounter)])]
        rules += MultihopRules.egress(profile, policy: policy, facts: facts)
        rules += TransportRules.guardRules(profile, facts: facts)
        if action != .block {
            rules.append(NftRule([.outputInterfaceName(tunnel, negated: false), .namedCounter(names.tunnelCounter), .verdict(.accept)]))
        }
        rules.append(NftRule([.toLoopback, .verdict(.accept)]))
        // Leaving elsewhere with a tunnel's address (a connection whose route changed): never.
        rules += sources
        let drop: [NftStatement] = [.namedCounter(names.droppedCounter), .verdict(.drop)]
        if action != .block {
            rules += ExceptionRules.holes(profile, facts: facts, leaving: true, then: [.namedCounter(names.directCounter), .verdict(.accept)],
                                          held: RoutingPlan.holds(profile, trusted: facts) ? drop : [.verdict(.accept)])
        }
        // A verdict either way: what comes back from here to the killswitch's chain is
        // no profile's (the stale marks' drop).
        rules.append(RoutingPlan.holds(profile, trusted: facts) ? NftRule(drop, comment: "profile \(profile.name): killswitch") : NftRule([.verdict(.accept)]))
        return rules
    }
}
