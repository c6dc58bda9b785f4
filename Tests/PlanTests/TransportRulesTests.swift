import Addresses
import Nftables
import Plan
import Policy
import Testing

/// No tunnel is routed into itself: a profile tunnel's known transport leaves every profile
/// first thing in route_output (whatever its connection decided before), and what would
/// enter a tunnel as its own transport is dropped and counted.
@Suite struct TransportRulesTests {
    let mask: UInt32 = 0x7f00_0000, bypass: UInt32 = 0x7f00_0000

    func facts(port: UInt16 = 51820) -> RuntimeFacts {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.tunnelTransports["wg0"] = TunnelTransport(source: .wireguardSocket, udpPort: port, owner: 0,
                                                        endpoints: [.init(address: IPAddress("203.0.113.2")!, port: 51821),
                                                                    .init(address: IPAddress("2001:db8:2::2")!, port: 51821)])
        var unknown = TunnelTransport(source: .unknown, detail: "no wg socket")
        unknown.guardUDPPorts = [1194]
        unknown.guardTCPPorts = [40022]
        unknown.heldBy = 77
        facts.tunnelTransports["tun0"] = unknown
        return facts
    }

    var policy: Policy {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.routeNetworks = [IPPrefix("203.0.113.0/24")!]
        return Policy(profiles: [work, profile("home", tunnel: "tun0", index: 2)], system: SystemSettings(profile: "work"))
    }

    @Test func theKnownTransportLeavesEveryProfileBeforeAnyVerdict() throws {
        let state = Planner.plan(policy, facts: facts())
        let output = try #require(state.nft.chain(named: "route_output")).rules.map(\.statements)
        #expect(output.first == [.sourcePortInSet(.udp, set: "tunnel_transport"), .socketUserInSet("tunnel_transport_owners"),
                                 .verdict(.jump("tunnel_transport"))])
        #expect(try #require(state.nft.chain(named: "tunnel_transport")).rules.map(\.statements) == [
            // A connection a profile carried into a tunnel keeps a NAT to the tunnel's address:
            // dropped until vpnd forgets it.
            [.conntrackMarkVerdictMap(mask: mask, map: "transport_held")],
            [.markMatch(mask: mask, value: 0, negated: false), .setConntrackMark(clear: mask, set: 0), .namedCounter("tunnel_transport"), .verdict(.accept)],
            [.setMark(clear: mask, set: bypass), .setConntrackMark(clear: mask, set: 0), .namedCounter("tunnel_transport"), .verdict(.accept)],
        ])
        #expect(state.nft.set(named: "transport_held")?.elements == [NftElement(key: .mark(0x0100_0000), verdict: .jump("held_work")),
                                                                     NftElement(key: .mark(0x0200_0000), verdict: .jump("held_home"))])
        #expect(state.nft.chain(named: "held_work")?.rules.map(\.statements) == [[.namedCounter("work_loop"), .verdict(.drop)]],
                "counted as the profile's loop")
        // Before the connection's verdict is restored, before any cgroup, route.networks
        // (which covers the tunnel's server here) and system mode.
        let restore = try #require(output.firstIndex(of: [.conntrackMarkVerdictMap(mask: mask, map: "connection_marks")]))
        let networks = try #require(output.firstIndex { $0.contains(.destinationVerdictMap(ipv4: true, map: "route_networks4")) })
        #expect(restore > 0 && networks > 0)
        #expect(state.nft.set(named: "tunnel_transport")?.elements == [NftElement(key: .port(51820))],
                "only the port vpnd knows: a guarded one (tun0's) is not let out")
        #expect(state.nft.set(named: "tunnel_transport")?.key == .port)
        #expect(state.nft.set(named: "tunnel_transport_owners")?.elements == [NftElement(key: .uid(0))])
        // System mode: a peer may send to the transport first.
        let input = try #require(state.nft.chain(named: "inbound")).rules.map(\.statements)
        #expect(input.contains([.conntrackStateNew, .destinationPortInSet(.udp, set: "tunnel_transport"), .verdict(.accept)]))
    }

    @Test func whatWouldEnterItsOwnTunnelIsDropped() throws {
        let state = Planner.plan(policy, facts: facts())
        let work = try #require(state.nft.chain(named: "egress_work")).rules.map(\.statements)
        #expect(work.first == [.transportProtocol(17), .outputInterfaceName("wg0", negated: false), .verdict(.jump("loop_work"))],
                "a member's TCP packet costs one comparison")
        let drop: [NftStatement] = [.namedCounter("work_loop"), .verdict(.drop)]
        #expect(try #require(state.nft.chain(named: "loop_work")).rules.map(\.statements) == [
            [.sourcePortInSet(.udp, set: "loop_udp_work")] + drop,
            [.destinationPortInSet(.udp, set: "loop_peerport_work"), .destinationInSet(ipv4: true, set: "loop_peer4_work", negated: false)] + drop,
            [.destinationPortInSet(.udp, set: "loop_peerport_work"), .destinationInSet(ipv4: false, set: "loop_peer6_work", negated: false)] + drop,
        ])
        #expect(state.nft.set(named: "loop_udp_work")?.elements == [NftElement(key: .port(51820))])
        #expect(state.nft.set(named: "loop_peer4_work")?.elements == [NftElement(key: .prefix(IPPrefix("203.0.113.2/32")!))])
        #expect(state.nft.set(named: "loop_peer6_work")?.elements == [NftElement(key: .prefix(IPPrefix("2001:db8:2::2/128")!))])
        #expect(state.nft.set(named: "loop_peerport_work")?.elements == [NftElement(key: .port(51821))])
        let home = try #require(state.nft.chain(named: "egress_home")).rules.map(\.statements)
        #expect(Array(home.prefix(2)) == [
            [.transportProtocol(17), .outputInterfaceName("tun0", negated: false), .verdict(.jump("loop_home"))],
            [.outputInterfaceName("tun0", negated: false), .sourcePortInSet(.tcp, set: "loop_tcp_home"), .namedCounter("home_loop"), .verdict(.drop)],
        ])
        #expect(state.nft.set(named: "loop_udp_home")?.elements == [NftElement(key: .port(1194))])
        #expect(state.nft.set(named: "loop_tcp_home")?.elements == [NftElement(key: .port(40022))])
        #expect(state.nft.counters.contains { $0.name == "home_loop" } && state.nft.counters.contains { $0.name == "work_loop" })
    }

    /// Nothing known: the rules are there with empty sets, so learning a port later is an
    /// element edit, like a new cgroup.
    @Test func aPortThatMovesChangesOnlyElements() throws {
        var nothing = RuntimeFacts()
        nothing.tunnelTransports["wg0"] = TunnelTransport(source: .unknown, detail: "no wg socket")
        let before = Planner.plan(Policy(profiles: [profile("work", tunnel: "wg0", index: 1)]), facts: nothing).nft
        var known = nothing
        known.tunnelTransports["wg0"] = TunnelTransport(source: .wireguardSocket, udpPort: 40000, owner: 0)
        let after = Planner.plan(Policy(profiles: [profile("work", tunnel: "wg0", index: 1)]), facts: known).nft
        #expect(before.chains == after.chains)
        #expect(before.sets.map(\.name) == after.sets.map(\.name))
        #expect(before.set(named: "tunnel_transport")?.elements == [])
        #expect(after.set(named: "tunnel_transport")?.elements == [NftElement(key: .port(40000))])
    }

    @Test func noProfilesNoTransportRules() {
        let state = Planner.plan(Policy(profiles: []), facts: RuntimeFacts())
        #expect(state.nft.set(named: "tunnel_transport") == nil)
        #expect(state.nft.chain(named: "route_output") == nil)
    }
}
