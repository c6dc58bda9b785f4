import Addresses
import Nftables
import Policy

/// No tunnel is routed into itself. A tunnel daemon's socket is a process's socket like
/// any other: in system mode it is a member, and route.networks can cover its server. If
/// it carries no mark of its own (wireguard-go without `fwmark`, any new socket after
/// `wg set IFACE listen-port N`), its encrypted packets would be routed into its own
/// tunnel, read back, encrypted again: a loop that fills the link. So:
/// - exclusion: the first rule of route_output takes a packet from a profile tunnel's
///   known transport port (UDP, sent by a socket of the user that holds that socket)
///   out of every profile: the connection's mark cleared, and the bypass mark where its
///   socket was born with a profile's (an unmarked one keeps the main table's route), so it wins
///   over whatever the connection decided before (a loop already under way stops at its
///   next packet) and the connection is looked at afresh once the port is no longer the
///   tunnel's. Ports are elements of a set: a port that moves is an element edit.
/// - guard: a profile's packet about to leave through its tunnel that is that tunnel's own
///   transport (from the tunnel's port or the ports of the process holding the tunnel
///   device, or to one of its peers' endpoints) is counted and dropped: the window after a
///   socket moved and before vpnd knows the new port, and tunnels vpnd cannot ask.
///   Dropped in postrouting, the connection is never confirmed: nothing of it sticks.
/// A member cannot use the exclusion: the port is bound by the tunnel's socket (no other
/// socket can bind it while it is held, but with SO_REUSEADDR or SO_REUSEPORT on both, and
/// SO_REUSEPORT only for the same user), and the packet's socket must belong to the user
/// that holds it (root for every tunnel daemon we know; a member that is root can set the
/// bypass mark itself anyway). A port the tunnel left is out of the set within a second.
enum TransportRules {
    static let portsSet = "tunnel_transport"
    static let ownersSet = "tunnel_transport_owners"
    /// A connection's profile mark -> that profile's chain that counts it as a loop and drops.
    static let heldMap = "transport_held"
    static let counter = "tunnel_transport"
    static let chain = "tunnel_transport"

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        let known = policy.profiles.compactMap { facts.tunnelTransports[$0.tunnel.interfaceName] }.filter { $0.udpPort != nil }
        // An exit hop's transport goes into its entry's tunnel, not direct (MultihopRules).
        let direct = policy.profiles.filter { $0.via == nil }.compactMap { facts.tunnelTransports[$0.tunnel.interfaceName] }
        table.sets += [
            NftSet(name: portsSet, key: .port, elements: Set(direct.compactMap(\.udpPort)).sorted().map { NftElement(key: .port($0)) },
                   comment: "the UDP ports of the profile tunnels' own sockets"),
            NftSet(name: ownersSet, key: .uid, elements: Set(known.compactMap(\.owner)).sorted().map { NftElement(key: .uid($0)) },
                   comment: "the users that hold them"),
            NftSet(name: heldMap, key: .mark, data: .verdict,
                   elements: policy.profiles.map { NftElement(key: .mark($0.mark.value), verdict: .jump(ProfileObjectNames($0.name).heldChain)) },
                   comment: "a transport connection a profile carried into its tunnel: counted as that profile's loop"),
        ]
        table.counters.append(NftCounter(name: counter, comment: "packets of the profile tunnels' own transport, kept out of every profile"))
        let mask = policy.routing.markMask
        table.chains.append(NftChain(name: chain, rules: [
            NftRule([.conntrackMarkVerdictMap(mask: mask, map: heldMap)],
                    comment: "carried into a profile before vpnd knew it: dropped until vpnd forgets the connection"),
            // A packet that carries none of our bits is routed by the main table already:
            // its mark stays as it is, so the route chain does not route it again (a second
            // FIB lookup for every encrypted datagram, 6% of a wireguard-go tunnel's TCP
            // throughput in bench/run) and a mark of its own, wg-quick's 51820, still
            // matches the tunnel daemon's own rules.
            NftRule([.markMatch(mask: mask, value: 0, negated: false), .setConntrackMark(clear: mask, set: 0),
                     .namedCounter(counter), .verdict(.accept)], comment: "no profile's, whatever its connection decided before"),
            NftRule([.setMark(clear: mask, set: policy.routing.bypassMark), .setConntrackMark(clear: mask, set: 0),
                     .namedCounter(counter), .verdict(.accept)], comment: "born in a profile: taken out of it"),
        ]))
        MultihopRules.add(policy, facts: facts, to: &table)
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let transport = facts.tunnelTransports[profile.tunnel.interfaceName]
            table.counters.append(NftCounter(name: names.loopCounter, comment: "profile \(profile.name): packets of \(profile.tunnel.interfaceName)'s own transport that would have entered it"))
            table.chains += [
                NftChain(name: names.loopChain, rules: loopRules(profile)),
                NftChain(name: names.heldChain, rules: [NftRule([.namedCounter(names.loopCounter), .verdict(.drop)])]),
            ]
            table.sets.append(NftSet(name: names.loopSet(.udp), key: .port, elements: (transport?.loopUDPPorts ?? []).map { NftElement(key: .port($0)) },
                                     comment: "profile \(profile.name): UDP ports of \(profile.tunnel.interfaceName)'s own transport"))
            // Its peers' endpoints, as addresses and ports apart (a peer's address with
            // another peer's port counts too): sets, so that a tunnel with many roaming
            // peers costs members two lookups and a roam an element edit.
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
    }

    /// First in route_output: the known transport goes direct, whatever decided before.
    /// A connection a profile had carried into a tunnel (a loop under way when vpnd learned
    /// the port) holds a source NAT to the tunnel's address that would send that address
    /// out on the physical link (and make the peer roam to it): its packets are dropped
    /// until vpnd has forgotten the connection, a second after it learned the port (what
    /// the loop left in the daemon's queues drains into the drop meanwhile).
    static func output(_ policy: Policy) -> [NftRule] {
        guard !policy.profiles.isEmpty else { return [] }
        return [NftRule([.sourcePortInSet(.udp, set: portsSet), .socketUserInSet(ownersSet), .verdict(.jump(chain))],
                        comment: "a profile tunnel's own transport")] + MultihopRules.output(policy)
    }

    /// Input, system mode: a tunnel's peer may send to its transport first.
    static func inbound() -> [NftRule] {
        [NftRule([.conntrackStateNew, .destinationPortInSet(.udp, set: portsSet), .verdict(.accept)],
                 comment: "a profile tunnel's own transport: its peers may send first")]
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
    /// A loop that was under way when vpnd learned the transport's port: counted, dropped.
    public var heldChain: String { "held_\(profile)" }
    /// Ports of the tunnel's own transport, by protocol.
    public func loopSet(_ transport: NftTransport) -> String { "loop_\(transport.rawValue)_\(profile)" }
    /// The addresses and ports of the tunnel's peers.
    public func loopPeers(ipv4: Bool) -> String { "loop_peer\(ipv4 ? 4 : 6)_\(profile)" }
    public var loopPeerPorts: String { "loop_peerport_\(profile)" }
}
