import Nftables
import Policy

/// What arrives for members. A member's listening socket would answer on any interface,
/// and a socket's packets are not looked at again once they arrive, so the input hook
/// holds them: for a new TCP connection (a SYN without ACK) or a datagram, the socket it
/// is for is looked up (`socket` does the lookup the packet would get) and its cgroup
/// decides: from the profile's tunnel or loopback it is let in, with allow_lan from a LAN
/// address and with bypass.domains from an address learned for it (the answers of a
/// direct connection), and from anywhere else dropped before any answer exists (with the
/// killswitch). The answers then go by the listener's mark, born with it, into the tunnel.
/// The rest of a TCP connection and ICMP need no look (the connection was let in, or is
/// one the member opened), so a member's TCP flow costs these chains a few comparisons,
/// and the kernel tracks nothing for it. Packets from a profile's tunnel are counted.
enum InboundRules {
    static let chain = "inbound"
    static let tunnelsMap = "inbound_tunnels"
    static let loopbackChain = "inbound_loopback"

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        var tunnels: [String: String] = [:]
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            tunnels[profile.tunnel.interfaceName] = tunnels[profile.tunnel.interfaceName] ?? names.inboundChain
            table.counters.append(NftCounter(name: names.receivedCounter, comment: "profile \(profile.name): packets received through \(profile.tunnel.interfaceName)"))
            table.chains.append(NftChain(name: names.inboundChain, rules: [NftRule([.namedCounter(names.receivedCounter), .verdict(.accept)])]))
            table.chains.append(NftChain(name: names.listenChain, rules: listen(profile, facts: facts)))
        }
        table.sets.append(NftSet(name: tunnelsMap, key: .interfaceName, data: .verdict,
                                 elements: tunnels.sorted { $0.key < $1.key }.map { NftElement(key: .interface($0.key), verdict: .jump($0.value)) },
                                 comment: "what arrives through a profile's tunnel: counted, let in"))
        let listeners = CgroupMaps(policy, facts: facts, name: "listen_level_", bypass: .accept) { .jump(ProfileObjectNames($0.name).listenChain) }
        table.sets += listeners.sets
        // The tunnels' own transport first: while members' flows run it is most of what
        // arrives, and one set lookup lets it in.
        var input = TransportRules.inbound(policy, facts: facts)
        // What comes in on `lo` is let in, but for steered DNS queries meant for another
        // socket than a proxy's: one interface comparison for everything else, and two
        // source compares for what comes in on `lo`.
        let steered = DNSRouting.steeredQueries(policy)
        table.chains += [NftChain(name: loopbackChain, rules: steered.rules + [NftRule([.verdict(.accept)])]), steered.chain]
        input += [
            NftRule([.fromLoopback, .verdict(.goto(loopbackChain))]),
            NftRule([.inputInterfaceVerdictMap(map: tunnelsMap)]),
            NftRule([.tcpSynWithoutAck(negated: true), .verdict(.accept)], comment: "a connection already let in, or one a member opened"),
            NftRule([.transportProtocol(1), .verdict(.accept)]),
            NftRule([.transportProtocol(58), .verdict(.accept)]),
        ]
        input += listeners.lookups(prefix: [])
        if let system = policy.systemProfile { input += SystemRules.inbound(system) }
        table.chains.append(NftChain(name: chain, base: NftBaseChain(kind: .filter, hook: .input, priority: NftBaseChain.filter), rules: input))
    }

    /// A new connection (or a datagram) to a member's socket from outside its tunnel.
    static func listen(_ profile: Profile, facts: RuntimeFacts) -> [NftRule] {
        let names = ProfileObjectNames(profile.name)
        var rules: [NftRule] = []
        let holds = RoutingPlan.holds(profile, trusted: facts)
        let drop: [NftStatement] = [.namedCounter(names.droppedCounter), .verdict(.drop)]
        rules += ExceptionRules.holes(profile, facts: facts, leaving: false, then: [.verdict(.accept)], held: holds ? drop : [.verdict(.accept)])
        if holds {
            rules.append(NftRule(drop, comment: "profile \(profile.name): killswitch, members accept connections through the tunnel only"))
        }
        return rules
    }
}

/// Verdict maps from profile cgroups (by id, one map per depth) to a chain of the profile.
struct CgroupMaps {
    var sets: [NftSet] = []
    private var levels: [UInt32] = []

    /// `bypass`: the verdict for the bypass slice, when the policy uses it (nil: no element).
    init(_ policy: Policy, facts: RuntimeFacts, name: String, bypass: NftVerdict?, verdict: (Profile) -> NftVerdict) {
        var entries = policy.profiles.map { profile in
            let path = profile.cgroupPath(parent: facts.cgroupParent)
            return (path, facts.cgroupIDs[path], verdict(profile))
        }
        if policy.usesBypassSlice, let bypass {
            let path = ExecutableRules.bypassCgroup(parent: facts.cgroupParent)
            entries.append((path, facts.cgroupIDs[path], bypass))
        }
        for (path, joined) in facts.joinedCgroups.sorted(by: { $0.key < $1.key }) {
            if let profile = policy.profile(named: joined.profile) { entries.append((path, joined.id, verdict(profile))) }
        }
        // The depths where systemd makes the units that join: a later join there is one
        // element for the kernel, where a new depth would be a new map and rule.
        self.init(entries, name: name, levels: policy.profiles.isEmpty ? [] : UnitCgroups.usualLevels)
    }

    /// Maps of these cgroups (path, id, verdict; those without an id are left out), with
    /// a map at each of `levels` whether or not a cgroup is there.
    init(_ entries: [(String, UInt64?, NftVerdict)], name: String, levels always: [UInt32] = []) {
        var byLevel: [UInt32: [NftElement]] = [:]
        for (path, id, verdict) in entries {
            guard let id else { continue }
            byLevel[RuntimeFacts.level(of: path), default: []].append(NftElement(key: .cgroup(id: id, path: path), verdict: verdict))
        }
        for level in always where byLevel[level] == nil { byLevel[level] = [] }
        // Deepest level first: the most specific profile cgroup wins.
        levels = byLevel.keys.sorted(by: >)
        sets = levels.map { NftSet(name: name + String($0), key: .cgroupv2, data: .verdict, elements: byLevel[$0]!) }
    }

    func lookups(prefix: [NftStatement]) -> [NftRule] {
        zip(levels, sets).map { NftRule(prefix + [.cgroupVerdictMap(level: $0, map: $1.name)]) }
    }
}
