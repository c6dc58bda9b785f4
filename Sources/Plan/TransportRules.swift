import Addresses
import Nftables
import Policy
import Routing

/// No tunnel is routed into itself. A tunnel daemon's socket is a process's socket like
/// any other: in system mode it is a member, and route.networks can cover its server. If
/// it carries no mark of its own (wireguard-go without `fwmark`, any new socket after
/// `wg set IFACE listen-port N`), its encrypted packets would be routed into its own
/// tunnel, read back, encrypted again: a loop that fills the link. So:
/// - exclusion: the UDP port of each profile tunnel's known transport, sent by a socket of
///   the user that holds it, goes past the route lists and system mode to the main table
///   (RoutingPlan's exclusion rules, a rule per port: a port that moves is one rule), and
///   in system mode the killswitch and the input hook let it pass. A member cannot use
///   the exclusion: the port is bound by the tunnel's socket (no other socket can bind it
///   while it is held, but with SO_REUSEADDR or SO_REUSEPORT on both, and SO_REUSEPORT
///   only for the same user), and the socket must belong to the user that holds it (root
///   for every tunnel daemon we know; a member that is root can route itself anyway).
/// - guard: a packet about to leave through a profile's tunnel that is that tunnel's own
///   transport (from the tunnel's port or the ports of the process holding the tunnel
///   device, or to one of its peers' endpoints) is counted and dropped: the window after a
///   socket moved and before vpnd knows the new port, and tunnels vpnd cannot ask. For a
///   profile's marked packets in its egress chain; for unmarked ones (route lists, system
///   mode) by the interface they would enter.
/// - drain: a port that becomes known while it may have looped (its exclusion rule is
///   new, and rules of ours were in the kernel before) is held for a second first
///   (`transport_draining`, elements with a timeout): what the loop left in the daemon, its
///   own transport wrapped once more, would reach the peer, which would unwrap it and take
///   the tunnel's own address for the client's endpoint. The rule that looks the map up is
///   in the table only while a port drains (`draining(_:)`, put in by the apply edge): every
///   datagram of the tunnel's transport passes the chain, and the map is empty otherwise.
///   The hold ends with the element's timeout, in the kernel, whether vpnd runs or not.
/// - sources: nothing with a tunnel's own address as its source leaves through another
///   interface (a reset or an ICMP error the kernel sends for a closed connection of the
///   tunnel carries no mark; a connection whose route changed keeps its address).
/// Nothing here re-routes a packet or tracks a connection: a port vpnd learns changes the
/// route of the next packet, and a loop under way stops at it.
public enum TransportRules {
    static let portsSet = "tunnel_transport"
    static let ownersSet = "tunnel_transport_owners"
    static let loopsMap = "tunnel_loops"
    static let drainingMap = "transport_draining"
    public static var drainingMapName: String { drainingMap }
    static func sourcesMap(ipv4: Bool) -> String { "tunnel_sources\(ipv4 ? 4 : 6)" }
    /// How long a newly known transport port is held.
    public static let drainSeconds: UInt32 = 1

    /// The profile tunnels' transports that go direct (an exit hop's goes into its entry's
    /// tunnel: MultihopRules).
    static func direct(_ policy: Policy, facts: RuntimeFacts) -> [TunnelTransport] {
        policy.profiles.filter { $0.via == nil }.compactMap { facts.tunnelTransports[$0.tunnel.interfaceName] }
    }

    /// The profiles whose tunnels rules of ours route unmarked packets into: the system
    /// profile and those with route lists. Another profile's tunnel gets unmarked packets
    /// only by someone else's routes.
    static func routingUnmarked(_ policy: Policy) -> [Profile] {
        let system = policy.systemProfile?.name
        return policy.profiles.filter { $0.name == system || RoutingPlan.routesNonMembers($0) }
    }

    /// Whether unmarked packets can be routed into a profile's tunnel at all.
    static func routesUnmarked(_ policy: Policy) -> Bool { !routingUnmarked(policy).isEmpty }

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        let known = policy.profiles.compactMap { facts.tunnelTransports[$0.tunnel.interfaceName] }.filter { $0.udpPort != nil }
        table.sets += [
            NftSet(name: portsSet, key: .port, elements: Set(direct(policy, facts: facts).compactMap(\.udpPort)).sorted().map { NftElement(key: .port($0)) },
                   comment: "the UDP ports of the profile tunnels' own sockets"),
            NftSet(name: ownersSet, key: .uid, elements: Set(known.compactMap(\.owner)).sorted().map { NftElement(key: .uid($0)) },
                   comment: "the users that hold them"),
        ]
        MultihopRules.add(policy, facts: facts, to: &table)
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let tunnel = profile.tunnel.interfaceName
            let transport = facts.tunnelTransports[tunnel]
            table.counters.append(NftCounter(name: names.loopCounter, comment: "profile \(profile.name): packets of \(profile.tunnel.interfaceName)'s own transport that would have entered it"))
            table.chains += [
                NftChain(name: names.loopChain, rules: loopRules(profile)),
                NftChain(name: names.heldChain, rules: [NftRule([.namedCounter(names.loopCounter), .verdict(.drop)])]),
                NftChain(name: names.sourceChain, rules: [
                    NftRule([.outputInterfaceName(tunnel, negated: false), .verdict(.accept)]),
                    NftRule([.toLoopback, .verdict(.accept)]),
                    NftRule((RoutingPlan.holds(profile, trusted: facts) || profile.killswitch ? [.namedCounter(names.droppedCounter)] : []) + [.verdict(.drop)],
                            comment: "profile \(profile.name): \(tunnel)'s own address never leaves elsewhere"),
                ]),
            ]
            table.sets.append(NftSet(name: names.loopSet(.udp), key: .port, elements: (transport?.loopUDPPorts ?? []).map { NftElement(key: .port($0)) },
                                     comment: "profile \(profile.name): UDP ports of \(profile.tunnel.interfaceName)'s own transport"))
            // Its peers' endpoints, as addresses and ports apart (a peer's address with
            // another peer's port counts too): sets, so that a tunnel with many roaming
            // peers costs two lookups and a roam an element edit.
            let endpoints = transport?.endpoints ?? []
            for ipv4 in [true, false] {
                let addresses = Set(endpoints.map(\.address).filter { $0.isIPv4 == ipv4 }).sorted { $0.description < $1.description }
                table.sets.append(NftSet(name: names.loopPeers(ipv4: ipv4), key: .address(ipv4: ipv4),
                                         elements: addresses.map { NftElement(key: .prefix(IPPrefix(address: $0, length: $0.bitCount)!)) },
                                         comment: ipv4 ? "profile \(profile.name): where \(profile.tunnel.interfaceName)'s peers are" : nil))
            }
            table.sets.append(NftSet(name: names.loopPeerPorts, key: .port, elements: Set(endpoints.map(\.port)).sorted().map { NftElement(key: .port($0)) }))
            if let tcp = transport?.guardTCPPorts, !tcp.isEmpty {
                table.sets.append(NftSet(name: names.loopSet(.tcp), key: .port, elements: Set(tcp).sorted().map { NftElement(key: .port($0)) },
                                         comment: "profile \(profile.name): TCP ports of the process holding \(profile.tunnel.interfaceName)"))
            }
        }
        let sources = tunnelSources(policy, facts: facts)
        for ipv4 in [true, false] {
            let elements = sources.filter { $0.address.isIPv4 == ipv4 }.map {
                NftElement(key: .prefix(IPPrefix(address: $0.address, length: $0.address.bitCount)!), verdict: .jump($0.chain))
            }
            table.sets.append(NftSet(name: sourcesMap(ipv4: ipv4), key: .address(ipv4: ipv4), data: .verdict, elements: elements,
                                     comment: ipv4 ? "the tunnels' own addresses: a packet from one leaves through its tunnel or not at all" : nil))
        }
        if routesUnmarked(policy) {
            table.sets += [
                NftSet(name: loopsMap, key: .interfaceName, data: .verdict,
                       elements: routedTunnels(policy).map { NftElement(key: .interface($0.interface), verdict: .jump($0.chain)) },
                       comment: "unmarked packets (route lists, system mode) about to enter a profile's tunnel: its own transport never does"),
                NftSet(name: drainingMap, key: .port, data: .verdict,
                       comment: "a tunnel's transport port just learned, held while what a loop left drains", timeout: true),
            ]
        }
    }

    /// For each known transport port that goes direct, the chain that holds it while it
    /// drains (the apply edge adds the element when the port's exclusion rule is new).
    static func drains(_ policy: Policy, facts: RuntimeFacts) -> [UInt16: String] {
        guard routesUnmarked(policy) else { return [:] }
        var drains: [UInt16: String] = [:]
        for profile in policy.profiles where profile.via == nil {
            if let port = facts.tunnelTransports[profile.tunnel.interfaceName]?.udpPort { drains[port] = ProfileObjectNames(profile.name).heldChain }
        }
        return drains
    }

    /// The tunnels of `routingUnmarked`, each with the loop chain of the first profile on it.
    static func routedTunnels(_ policy: Policy) -> [(interface: String, chain: String)] {
        var tunnels: [(interface: String, chain: String)] = []
        for profile in routingUnmarked(policy) {
            let interface = profile.tunnel.interfaceName
            if !tunnels.contains(where: { $0.interface == interface }) { tunnels.append((interface, ProfileObjectNames(profile.name).loopChain)) }
        }
        return tunnels
    }

    /// Up to this many routed tunnels are compared one by one; more are looked up in the map.
    static let comparedTunnels = 2

    /// The killswitch's chain for packets without a profile's mark (KillswitchRules), first
    /// (after the draining rule while a port drains): UDP entering a tunnel it is routed
    /// into. Every datagram of a userspace tunnel's own transport passes here (one per
    /// packet a member sends), so the usual one or two routed tunnels are compared inline,
    /// as the sources are (sourceRules), not looked up; and by interface first: those
    /// datagrams are UDP too, and leave elsewhere, so one comparison turns them away. By
    /// the tunnel's index where the facts have it: our routes into the tunnel are made by
    /// that index in the same plan (RoutingPlan), after this table in the same apply, so
    /// no rule of ours routes into a tunnel made again under a new index before the guard
    /// compares it; a tunnel that is not there is compared by name.
    static func unmarkedGuard(_ policy: Policy, facts: RuntimeFacts) -> [NftRule] {
        guard routesUnmarked(policy) else { return [] }
        let routed = routedTunnels(policy)
        let udp = NftStatement.transportProtocol(NftTransport.udp.number)
        return routed.count > comparedTunnels ? [NftRule([udp, .outputInterfaceVerdictMap(map: loopsMap)])]
            : routed.map { tunnel in
                let interface = facts.links[tunnel.interface].map { NftStatement.outputInterface(name: tunnel.interface, index: $0.index) }
                return NftRule([interface ?? .outputInterfaceName(tunnel.interface, negated: false), udp, .verdict(.jump(tunnel.chain))])
            }
    }

    /// The transport ports to hold while they drain: those whose exclusion rule is about to
    /// be added (`adding`), where it may have looped into its tunnel until now. Only rules of
    /// ours route a transport into its tunnel: with none in the kernel yet (`present` empty:
    /// a first start, or one after `vpnctl teardown`) nothing looped, and nothing is held.
    public static func portsToDrain(adding: [RoutingRule], present: [RoutingRule], drains: [UInt16: String]) -> [UInt16] {
        guard !present.isEmpty else { return [] }
        return Set(adding.compactMap { rule in rule.sourcePorts.flatMap { drains[$0.lowerBound] != nil ? $0.lowerBound : nil } }).sorted()
    }

    /// The rule that holds a draining port, first in the chain for unmarked packets.
    static let drainingRule = NftRule([.sourcePortVerdictMap(.udp, map: drainingMap)], comment: "a transport port draining")

    /// `table` while a transport port drains: the draining map looked up first for unmarked
    /// packets. The table unchanged where nothing can drain (no draining map).
    public static func draining(_ table: NftTable) -> NftTable {
        guard table.set(named: drainingMap) != nil, let index = table.chains.firstIndex(where: { $0.name == KillswitchRules.unmarkedChain })
        else { return table }
        var held = table
        held.chains[index].rules.insert(drainingRule, at: 0)
        return held
    }

    /// The profile tunnels' own addresses, each with the chain of the first profile whose
    /// tunnel holds it.
    static func tunnelSources(_ policy: Policy, facts: RuntimeFacts) -> [(address: IPAddress, chain: String)] {
        var sources: [(address: IPAddress, chain: String)] = []
        for profile in policy.profiles {
            for address in facts.tunnelAddresses[profile.tunnel.interfaceName] ?? [] where !sources.contains(where: { $0.address == address }) {
                sources.append((address, ProfileObjectNames(profile.name).sourceChain))
            }
        }
        return sources
    }

    /// Up to this many addresses (two tunnels with an IPv4 and an IPv6 address each) are
    /// compared one by one; more are looked up in the maps.
    static let comparedSources = 4

    /// A tunnel's own address leaves through that tunnel or not at all, whatever the mark.
    /// Every packet a member sends through a userspace tunnel comes back here as the tunnel's
    /// own datagram, so this runs once per packet; a compare is inline in nftables' rule
    /// loop, a map lookup is a call into the set (bench/README: the lookup was the largest
    /// part of the table's cost to a member's flow). The maps hold the addresses either way.
    static func sourceRules(_ policy: Policy, facts: RuntimeFacts) -> [NftRule] {
        let sources = tunnelSources(policy, facts: facts)
        guard sources.count > comparedSources else {
            let ordered = sources.filter { $0.address.isIPv4 } + sources.filter { !$0.address.isIPv4 }
            return ordered.map { NftRule([.sourceAddress($0.address), .verdict(.jump($0.chain))]) }
        }
        return [true, false].map { NftRule([.sourceVerdictMap(ipv4: $0, map: sourcesMap(ipv4: $0))]) }
    }

    /// Input, the first rule: a tunnel's own transport is let in (it is the bulk of what
    /// arrives; in system mode its peers may also send first).
    static func inbound(_ policy: Policy, facts: RuntimeFacts) -> [NftRule] {
        [NftRule([.destinationPortInSet(.udp, set: portsSet), .verdict(.accept)], comment: "a profile tunnel's own transport")]
    }

    /// First in the profile's egress chain (postrouting): its tunnel's own transport never
    /// enters it. A member's TCP packet, the usual bulk, costs one comparison here.
    static func guardRules(_ profile: Profile, facts: RuntimeFacts) -> [NftRule] {
        let names = ProfileObjectNames(profile.name)
        let tunnel = profile.tunnel.interfaceName
        var rules = [NftRule([.transportProtocol(NftTransport.udp.number), .outputInterfaceName(tunnel, negated: false), .verdict(.jump(names.loopChain))],
                             comment: "profile \(profile.name): \(tunnel)'s own transport never enters it")]
        if let tcp = facts.tunnelTransports[tunnel]?.guardTCPPorts, !tcp.isEmpty {
            rules.append(NftRule([.outputInterfaceName(tunnel, negated: false), .sourcePortInSet(.tcp, set: names.loopSet(.tcp)),
                                  .namedCounter(names.loopCounter), .verdict(.drop)]))
        }
        return rules
    }

    /// The profile's loop chain: UDP about to enter its tunnel from the tunnel's own ports or
    /// to its peers.
    private static func loopRules(_ profile: Profile) -> [NftRule] {
        let names = ProfileObjectNames(profile.name)
        let drop: [NftStatement] = [.namedCounter(names.loopCounter), .verdict(.drop)]
        return [NftRule([.sourcePortInSet(.udp, set: names.loopSet(.udp))] + drop, comment: "from its own ports")]
            + [true, false].map { ipv4 in
                NftRule([.destinationPortInSet(.udp, set: names.loopPeerPorts),
                         .destinationInSet(ipv4: ipv4, set: names.loopPeers(ipv4: ipv4), negated: false)] + drop,
                        comment: ipv4 ? "to its peers" : nil)
            }
    }
}

extension ProfileObjectNames {
    /// Packets of the tunnel's own transport that were about to enter it.
    public var loopCounter: String { "\(profile)_loop" }
    /// UDP about to enter the profile's tunnel is checked here.
    public var loopChain: String { "loop_\(profile)" }
    /// A transport port of its tunnel held while it drains: counted as the loop, dropped.
    public var heldChain: String { "held_\(profile)" }
    /// A packet with the tunnel's own address as its source: through the tunnel or nowhere.
    public var sourceChain: String { "source_\(profile)" }
    /// Ports of the tunnel's own transport, by protocol.
    public func loopSet(_ transport: NftTransport) -> String { "loop_\(transport.rawValue)_\(profile)" }
    /// The addresses and ports of the tunnel's peers.
    public func loopPeers(ipv4: Bool) -> String { "loop_peer\(ipv4 ? 4 : 6)_\(profile)" }
    public var loopPeerPorts: String { "loop_peerport_\(profile)" }
}
