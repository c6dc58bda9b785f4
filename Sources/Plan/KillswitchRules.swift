import Nftables
import Policy

/// The killswitch, where the output interface is final (postrouting: in the output hook
/// later chains would still see the interface chosen before the route chain re-routed).
/// A profile's marked packet may leave through its tunnel or loopback; anything else is
/// counted and dropped. These rules live in the kernel, not in the daemon: they hold when
/// vpnd stops or dies and while the tunnel is down or deleted (matching is by interface
/// name, so a re-created tunnel matches again). Marked packets leaving through the tunnel
/// get the tunnel's address as source when they were addressed before a re-route (a
/// socket made before its process joined, route.networks); a socket born marked has it.
/// The connection's mark is checked too: it is set from the cgroup and no socket option
/// reaches it, so a member's packet whose mark something changed after the route chain
/// is still held. (`socket cgroupv2` itself is not available in postrouting.) Before all
/// that, the tunnel's own transport is kept from entering it (TransportRules).
enum KillswitchRules {
    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        let mask = policy.routing.markMask
        var egressMarks: [NftElement] = []
        var nat: [NftRule] = []
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let mark = profile.mark.value
            let tunnel = profile.tunnel.interfaceName
            egressMarks.append(NftElement(key: .mark(mark), verdict: .jump(names.egressChain)))
            table.counters.append(NftCounter(name: names.tunnelCounter, comment: "profile \(profile.name): packets that left through \(tunnel)"))
            // Trusted networks: `disconnect` lifts the drop (members go direct), `block` drops
            // even what a member would send into the tunnel itself (a socket bound to it).
            let action = facts.trustedAction(profile)
            var rules = TransportRules.guardRules(profile, facts: facts)
            if action != .block {
                rules.append(NftRule([.outputInterfaceName(tunnel, negated: false), .namedCounter(names.tunnelCounter), .verdict(.accept)]))
            }
            rules.append(NftRule([.outputInterfaceName("lo", negated: false), .verdict(.accept)]))
            if profile.killswitch || action == .block {
                table.counters.append(NftCounter(name: names.droppedCounter, comment: "profile \(profile.name): packets dropped by the killswitch"))
            }
            if (profile.killswitch && action != .disconnect) || action == .block {
                rules.append(NftRule([.namedCounter(names.droppedCounter), .verdict(.drop)],
                                     comment: "profile \(profile.name): killswitch"))
            }
            table.chains.append(NftChain(name: names.egressChain, rules: rules))
            // A socket born with the mark has the tunnel's address already: no NAT binding.
            nat.append(NftRule([.markMatch(mask: mask, value: mark, negated: false),
                                .outputInterfaceName(tunnel, negated: false), .sourceIsOutputInterfaceAddress(negated: true), .masquerade]))
        }
        // A socket born with a profile's mark that went direct (allow_lan, bypass.domains)
        // chose the tunnel's address when it connected: leaving through another interface
        // it needs that interface's. Others that go direct have it already (no binding).
        nat.append(NftRule([.markMatch(mask: mask, value: policy.routing.bypassMark, negated: false), .outputInterfaceName("lo", negated: true),
                            .sourceIsOutputInterfaceAddress(negated: true), .masquerade],
                           comment: "direct, from a socket born in a profile"))
        table.sets.append(NftSet(name: "egress_marks", key: .mark, data: .verdict, elements: egressMarks))
        table.chains += [
            NftChain(name: "killswitch", base: NftBaseChain(kind: .filter, hook: .postrouting, priority: NftBaseChain.filter), rules: [
                NftRule([.markVerdictMap(mask: mask, map: "egress_marks")]),
                NftRule([.conntrackMarkVerdictMap(mask: mask, map: "egress_marks")]),
            ]),
            NftChain(name: "source_nat", base: NftBaseChain(kind: .nat, hook: .postrouting, priority: NftBaseChain.srcnat), rules: nat),
        ]
    }
}
