import Nftables
import Policy

/// New connections to members. A member's listening socket would otherwise answer on any
/// interface: `socket cgroupv2` in the output path sees only full sockets, and a SYN-ACK
/// is sent by a request socket, so it would leave unmarked, in the clear. Both halves:
/// - in the input hook, the socket a new connection is for is looked up (`socket` does the
///   lookup a listener would get) and its cgroup decides: from the profile's tunnel the
///   connection is accepted and marked as the profile's (ct mark), from loopback accepted,
///   with allow_lan from a LAN address too (the connection then goes direct), from
///   anywhere else dropped before any answer exists (with the killswitch);
/// - the ct mark makes the answers members' packets in the output path (restored from the
///   connection), so they are routed into the tunnel and held by the killswitch too.
/// Unknown cgroups where a profile cgroup could be are refused the same way.
enum InboundRules {
    static let unknownChain = "unknown_listener"

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        let mask = policy.routing.markMask
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let mark = profile.mark.value
            var rules = [
                NftRule([.inputInterfaceName(profile.tunnel.interfaceName, negated: false),
                         .setConntrackMark(clear: mask, set: mark), .verdict(.accept)],
                        comment: "profile \(profile.name): a connection from the tunnel to a member is the profile's"),
                NftRule([.inputInterfaceName("lo", negated: false), .verdict(.accept)]),
            ]
            rules += ExceptionRules.lanSources(profile, policy: policy, facts: facts)
            // Trusted networks: `disconnect` lets members be reached directly too.
            let action = facts.trustedAction(profile)
            if (profile.killswitch && action != .disconnect) || action == .block {
                rules.append(NftRule([.namedCounter(names.droppedCounter), .verdict(.drop)],
                                     comment: "profile \(profile.name): killswitch, members accept connections through the tunnel only"))
            }
            table.chains.append(NftChain(name: names.listenChain, rules: rules))
        }
        let listeners = CgroupMaps(policy, facts: facts, name: "listen_level_", bypass: .accept) { .jump(ProfileObjectNames($0.name).listenChain) }
        table.sets += listeners.sets
        var input = listeners.lookups(prefix: [.conntrackStateNew])
        let unknown = UnknownCgroups(policy, facts: facts)
        if !unknown.isEmpty {
            table.chains.append(NftChain(name: unknownChain, rules: [
                NftRule([.inputInterfaceName("lo", negated: false), .verdict(.accept)]),
                NftRule([.namedCounter(MembershipRules.unknownCounter), .verdict(.drop)], comment: "fail closed until vpnd knows this cgroup"),
            ]))
            input += unknown.rules(prefix: [.conntrackStateNew], target: unknownChain)
        }
        if let system = policy.systemProfile { input += SystemRules.inbound(system) }
        table.chains.append(NftChain(name: "inbound", base: NftBaseChain(kind: .filter, hook: .input, priority: NftBaseChain.filter), rules: input))
    }
}
