import Addresses
import Nftables
import Plan
import Policy
import Routing
import Testing

/// No tunnel is routed into itself: where unmarked sockets can be routed into a tunnel
/// (route lists, system mode), a profile tunnel's known transport goes past those rules to
/// the main table; and what would enter a tunnel as its own transport is dropped, counted.
@Suite struct TransportRulesTests {
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

    @Test func theKnownTransportGoesPastTheRouteListsAndSystemMode() throws {
        let state = Planner.plan(policy, facts: facts())
        let exclusions = state.rules.filter { $0.priority == 7302 && $0.ipProtocol == 17 && $0.destinationPorts == nil }
        #expect(exclusions == [true, false].map { ipv4 in
            RoutingRule(ipv4: ipv4, priority: 7302, mark: 0, mask: .max, table: 0, protocolNumber: 118, action: .goto(priority: 7305),
                        inputInterface: "lo", ipProtocol: 17, sourcePorts: 51820...51820, uidRange: 0...0)
        }, "only the port vpnd knows, of the user that holds it: a guarded one (tun0's) is not let out")
        let lists = try #require(state.rules.firstIndex { $0.priority == 7303 })
        #expect(state.rules.firstIndex(of: exclusions[0])! < lists, "before route.networks (which covers the tunnel's server here)")
        #expect(state.nft.set(named: "tunnel_transport")?.elements == [NftElement(key: .port(51820))])
        #expect(state.nft.set(named: "tunnel_transport_owners")?.elements == [NftElement(key: .uid(0))])
        // Arriving, it is let in first; in system mode a peer may send to it first.
        let input = try #require(state.nft.chain(named: "inbound")).rules.map(\.statements)
        #expect(input.contains([.destinationPortInSet(.udp, set: "tunnel_transport"), .verdict(.accept)]))
    }

    @Test func whatWouldEnterItsOwnTunnelIsDropped() throws {
        let state = Planner.plan(policy, facts: facts())
        let work = try #require(state.nft.chain(named: "egress_work")).rules.map(\.statements)
        #expect(work[1] == [.transportProtocol(17), .outputInterfaceName("wg0", negated: false), .verdict(.jump("loop_work"))],
                "after the sent counter; a member's TCP packet costs one comparison")
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
        #expect(Array(home[1...2]) == [
            [.transportProtocol(17), .outputInterfaceName("tun0", negated: false), .verdict(.jump("loop_home"))],
            [.outputInterfaceName("tun0", negated: false), .sourcePortInSet(.tcp, set: "loop_tcp_home"), .namedCounter("home_loop"), .verdict(.drop)],
        ])
        #expect(state.nft.set(named: "loop_udp_home")?.elements == [NftElement(key: .port(1194))])
        #expect(state.nft.set(named: "loop_tcp_home")?.elements == [NftElement(key: .port(40022))])
        // Unmarked packets (route lists, system mode) meet the guard by the tunnel they are
        // routed into: wg0 (work's system mode and route list), not tun0 (home routes only
        // its members); one tunnel is compared, not looked up.
        let unmarked = try #require(state.nft.chain(named: "unmarked")).rules.map(\.statements)
        #expect(unmarked[0] == [.outputInterfaceName("wg0", negated: false), .transportProtocol(17), .verdict(.jump("loop_work"))],
                "by interface first: the tunnel's own datagrams, the bulk here, leave elsewhere")
        #expect(!unmarked.contains([.transportProtocol(17), .outputVerdictMapForTunnels]))
        #expect(state.nft.set(named: "tunnel_loops")?.elements == [NftElement(key: .interface("wg0"), verdict: .jump("loop_work"))])
    }

    /// A tunnel that is there is compared by its index, the one the same plan routes into:
    /// four bytes, not a name copied for each datagram. Made again under another index, the
    /// next plan has the new one in both.
    @Test func thereTheGuardComparesTheIndexItsRoutesUse() throws {
        var known = facts()
        for index in [Int32(7), 12] {
            known.links["wg0"] = Link(index: index, name: "wg0", isUp: true, isRunning: true, mtu: 1420)
            let state = Planner.plan(policy, facts: known)
            let unmarked = try #require(state.nft.chain(named: "unmarked")).rules.map(\.statements)
            #expect(unmarked[0] == [.outputInterface(name: "wg0", index: index), .transportProtocol(17), .verdict(.jump("loop_work"))])
            let intoTunnel = state.routes.filter { if case .device = $0.kind { return true } else { return false } }
            #expect(!intoTunnel.isEmpty && intoTunnel.allSatisfy { $0.kind == .device(index: index) }, "\(intoTunnel)")
            #expect(PlanText.render(state).contains("oif \"wg0\" meta l4proto 17 jump loop_work"), "nft takes the name and stores its index")
        }
    }

    /// Beyond two routed tunnels the guard looks them up in the map; a tunnel shared by two
    /// routing profiles is there once, with the first profile's chain.
    @Test func manyRoutedTunnelsAreLookedUp() throws {
        var profiles = (1...4).map { profile("p\($0)", tunnel: $0 == 4 ? "wg1" : "wg\($0)", index: UInt32($0)) }
        for index in profiles.indices { profiles[index].routeNetworks = [IPPrefix("198.51.100.\(index)/32")!] }
        let state = Planner.plan(Policy(profiles: profiles + [profile("other", tunnel: "wg9", index: 5)]), facts: RuntimeFacts())
        let unmarked = try #require(state.nft.chain(named: "unmarked")).rules.map(\.statements)
        #expect(unmarked[0] == [.transportProtocol(17), .outputVerdictMapForTunnels])
        #expect(state.nft.set(named: "tunnel_loops")?.elements == [
            NftElement(key: .interface("wg1"), verdict: .jump("loop_p1")), NftElement(key: .interface("wg2"), verdict: .jump("loop_p2")),
            NftElement(key: .interface("wg3"), verdict: .jump("loop_p3")),
        ])
    }

    /// A port whose exclusion is new drains a second first (the apply edge adds the element
    /// before the rule); a tunnel's own address leaves through it or not at all.
    @Test func aNewPortDrainsAndTheTunnelsAddressStaysInIt() throws {
        var known = facts()
        known.tunnelAddresses = ["wg0": [IPAddress("10.99.1.2")!, IPAddress("fd99:1::2")!]]
        let state = Planner.plan(policy, facts: known)
        #expect(state.transportDrains == [51820: "held_work"])
        #expect(state.nft.set(named: "transport_draining")?.timeout == true)
        #expect(state.nft.chain(named: "held_work")?.rules.map(\.statements) == [[.namedCounter("work_loop"), .verdict(.drop)]])
        let killswitch = try #require(state.nft.chain(named: "killswitch")).rules.map(\.statements)
        #expect(killswitch[0] == [.markMatch(mask: 0x7f00_0000, value: 0, negated: false), .verdict(.goto("unmarked"))])
        // The map is looked up only while a port drains: the apply edge puts the rule first
        // then, and takes it out after.
        #expect(!(state.nft.chain(named: "unmarked")?.rules.contains { $0.statements == [.sourcePortVerdictMap(.udp, map: "transport_draining")] } ?? true))
        let held = TransportRules.draining(state.nft)
        #expect(held.chain(named: "unmarked")?.rules.first?.statements == [.sourcePortVerdictMap(.udp, map: "transport_draining")])
        #expect(Array(try #require(held.chain(named: "unmarked")).rules.dropFirst()) == state.nft.chain(named: "unmarked")?.rules)
        #expect(held.chains.filter { $0.name != "unmarked" } == state.nft.chains.filter { $0.name != "unmarked" } && held.sets == state.nft.sets)
        let appMode = Planner.plan(Policy(profiles: [profile("work", tunnel: "wg0", index: 1)]), facts: known).nft
        #expect(TransportRules.draining(appMode) == appMode, "no draining map, nothing to hold")
        #expect(state.nft.set(named: "tunnel_sources4")?.elements == [NftElement(key: .prefix(IPPrefix("10.99.1.2/32")!), verdict: .jump("source_work"))])
        #expect(state.nft.set(named: "tunnel_sources6")?.elements == [NftElement(key: .prefix(IPPrefix("fd99:1::2/128")!), verdict: .jump("source_work"))])
        #expect(state.nft.chain(named: "source_work")?.rules.map(\.statements) == [
            [.outputInterfaceName("wg0", negated: false), .verdict(.accept)], [.toLoopback, .verdict(.accept)],
            [.namedCounter("work_dropped"), .verdict(.drop)],
        ])
        #expect(Planner.plan(Policy(profiles: [profile("work", tunnel: "wg0", index: 1)]), facts: known).transportDrains.isEmpty,
                "nothing to drain where no unmarked socket is routed into a tunnel")
    }

    /// A tunnel's own address leaves through it or not at all, checked for every packet that
    /// leaves: by a compare for each address while there are a few, by the maps beyond.
    @Test func theTunnelsAddressesAreComparedWhileFewAndLookedUpBeyond() throws {
        var few = facts()
        few.tunnelAddresses = ["wg0": [IPAddress("fd99:1::2")!, IPAddress("10.99.1.2")!], "tun0": [IPAddress("10.8.0.2")!]]
        let compared: [[NftStatement]] = [
            [.sourceAddress(IPAddress("10.99.1.2")!), .verdict(.jump("source_work"))],
            [.sourceAddress(IPAddress("10.8.0.2")!), .verdict(.jump("source_home"))],
            [.sourceAddress(IPAddress("fd99:1::2")!), .verdict(.jump("source_work"))],
        ]
        var state = Planner.plan(policy, facts: few)
        let unmarked = try #require(state.nft.chain(named: "unmarked")).rules.map(\.statements)
        #expect(Array(unmarked[1...3]) == compared, "after the loop guard: \(unmarked)")
        #expect(try #require(state.nft.chain(named: "egress_home")).rules.map(\.statements).contains(compared[0]), "a member's own chain too")
        #expect(state.nft.set(named: "tunnel_sources4")?.elements.count == 2, "the maps hold them either way")

        var many = few
        many.tunnelAddresses["tun0"] = (2...4).map { IPAddress("10.8.0.\($0)")! }
        state = Planner.plan(policy, facts: many)
        let looked = try #require(state.nft.chain(named: "unmarked")).rules.map(\.statements)
        #expect(Array(looked[1...2]) == [[.sourceVerdictMap(ipv4: true, map: "tunnel_sources4")], [.sourceVerdictMap(ipv4: false, map: "tunnel_sources6")]])
        #expect(!looked.contains { $0.contains { if case .sourceAddress = $0 { true } else { false } } })
        #expect(state.nft.set(named: "tunnel_sources4")?.elements.count == 4)
    }

    /// Without route lists or system mode nothing routes an unmarked socket into a tunnel:
    /// no exclusion rules, no guard by interface.
    @Test func appModeNeedsNoExclusion() {
        let state = Planner.plan(Policy(profiles: [profile("work", tunnel: "wg0", index: 1)]), facts: facts())
        #expect(!state.rules.contains { $0.priority > 7301 })
        #expect(state.nft.set(named: "tunnel_loops") == nil)
    }

    /// Nothing known: the sets are there and empty, so learning a port later is an element
    /// edit (and one exclusion rule), like a new cgroup.
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
        #expect(state.nft.chains.isEmpty)
    }

    /// A port drains when its exclusion rule is new and rules of ours were in the kernel
    /// (it may have looped until now); not on a first start, nor for a port with no drain.
    @Test func portsDrainOnlyWhereTheyMayHaveLooped() {
        func exclusion(_ port: UInt16) -> RoutingRule {
            RoutingRule(ipv4: true, priority: 10, mark: 0, mask: 0, table: 254, protocolNumber: 118, ipProtocol: 17, sourcePorts: port...port)
        }
        let other = RoutingRule(ipv4: true, priority: 20, mark: 1, mask: 1, table: 100, protocolNumber: 118)
        let drains: [UInt16: String] = [51820: "held_work", 51821: "held_home"]
        #expect(TransportRules.portsToDrain(adding: [exclusion(51821), exclusion(51820), exclusion(51820)], present: [other], drains: drains) == [51820, 51821])
        #expect(TransportRules.portsToDrain(adding: [exclusion(51820)], present: [], drains: drains).isEmpty, "a first start: nothing looped")
        #expect(TransportRules.portsToDrain(adding: [exclusion(40000), other], present: [other], drains: drains).isEmpty, "no drain for the port")
    }
}

extension NftStatement {
    static let outputVerdictMapForTunnels = NftStatement.outputInterfaceVerdictMap(map: "tunnel_loops")
}
