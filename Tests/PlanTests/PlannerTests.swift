import Addresses
import DNS
import DomainNames
import Nftables
import Plan
import Policy
import Routing
import SocketPrograms
import Testing

func profile(_ name: String, tunnel: String, index: UInt32, killswitch: Bool = true) -> Profile {
    let here = SourceLocation(file: "/p/t.toml", line: 1, column: 1)
    return Profile(name: name, location: here, tunnel: .interface(tunnel),
                   access: Access(users: [], groups: [], location: here),
                   killswitch: killswitch, index: index, table: 7300 + index)
}

/// Every statement of a table, for properties of the whole (no connection tracking).
func statements(_ table: NftTable) -> [NftStatement] {
    table.chains.flatMap { $0.rules.flatMap(\.statements) }
}

/// What makes the kernel track connections or run its NAT hooks for every packet of the
/// namespace once any rule uses it: of the statements there are, only masquerade (which
/// vpn-server's forwarding uses, and a plan only while a member's container is routed:
/// ContainerRulesTests).
func tracksConnections(_ statement: NftStatement) -> Bool {
    statement == .masquerade
}

@Suite struct PlannerTests {
    let policy = Policy(profiles: [profile("work", tunnel: "wg0", index: 1), profile("home", tunnel: "tun0", index: 2, killswitch: false)])
    let mask: UInt32 = 0x7f00_0000
    let up = ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)]

    /// cgroup -> mark at the socket, mark -> table by rule, table -> tunnel, killswitch by
    /// the packet's mark; no output chain, no connection tracking, no NAT.
    @Test func cgroupMarkRoutePath() throws {
        let facts = RuntimeFacts(cgroupParent: "vpn.slice",
                                 cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-home.slice": 102],
                                 cgroupsAlongParent: ["vpn.slice": 100], links: up)
        let state = Planner.plan(policy, facts: facts)
        #expect(state.cgroups == ["vpn.slice/vpn-work.slice", "vpn.slice/vpn-home.slice"])

        // cgroup -> mark: the socket programs (SocketProgramPlanTests has the details).
        #expect(state.socketPrograms.map(\.cgroup) == ["vpn.slice", "vpn.slice/vpn-home.slice", "vpn.slice/vpn-work.slice"],
                "the root's path guard needs the root's id, which these facts lack")
        #expect(state.socketPrograms.last?.settings.mark == 0x0100_0000)

        // mark -> table (v4 and v6), table -> tunnel with a dead end of last resort.
        // Members' DNS, UDP and TCP: to their proxies, before the local table
        // (DNSRoutingTests). Two profiles: unmarked lookups skip their four DNS rules (a goto
        // to the local table's, one visit) and pass their two table rules (a skip would cost
        // two visits as well: a goto, and a nop at its target).
        #expect(state.rules.filter { $0.priority < 7299 } == DNSRouting.rules(policy, facts: facts) && state.rules.filter { $0.priority < 7299 }.count == 12)
        #expect(state.rules.filter { $0.priority >= 7299 } == [
            RoutingRule(ipv4: true, priority: 7300, mark: 0x0100_0000, mask: mask, table: 7301, protocolNumber: 118),
            RoutingRule(ipv4: false, priority: 7300, mark: 0x0100_0000, mask: mask, table: 7301, protocolNumber: 118),
            RoutingRule(ipv4: true, priority: 7300, mark: 0x0200_0000, mask: mask, table: 7302, protocolNumber: 118),
            RoutingRule(ipv4: false, priority: 7300, mark: 0x0200_0000, mask: mask, table: 7302, protocolNumber: 118),
        ], "no route lists, no system mode: nothing for unmarked sockets")
        #expect(state.routes == [
            Route(destination: .defaultRoute(ipv4: true), table: 7301, kind: .device(index: 7), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: true), table: 7301, kind: .unreachable, metric: .max, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: false), table: 7301, kind: .device(index: 7), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: false), table: 7301, kind: .unreachable, metric: .max, protocolNumber: 118),
            // "home" has no killswitch and its tunnel is missing: nothing, so lookups fall through.
            Route(destination: .defaultRoute(ipv4: true), table: 7301 + 131072, kind: .local(index: 1, source: .v4(0x7f4d_0001)), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: false), table: 7301 + 131072, kind: .local(index: 1, source: .v6(0xfd7f_004d_0000_0000, 1)), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: true), table: 7302 + 131072, kind: .local(index: 1, source: .v4(0x7f4d_0002)), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: false), table: 7302 + 131072, kind: .local(index: 1, source: .v6(0xfd7f_004d_0000_0000, 2)), metric: 1, protocolNumber: 118),
        ])
        // Replies come back unmarked: the tunnel's reverse-path check is loose.
        #expect(state.sysctls == [Sysctl("net/ipv4/conf/wg0/rp_filter", "2")])

        // The killswitch: by the packet's mark, in postrouting.
        let killswitch = try #require(state.nft.chain(named: "killswitch"))
        #expect(killswitch.base == NftBaseChain(kind: .filter, hook: .postrouting, priority: 0))
        #expect(killswitch.rules.map(\.statements) == [
            // Packets without our mark (the tunnels' own, most of what passes) by a compare.
            [.markMatch(mask: mask, value: 0, negated: false), .verdict(.goto("unmarked"))],
            [.markVerdictMap(mask: mask, map: "egress_marks")],
            // Every chain the map jumps to ends in a verdict: what comes back is no one's mark
            // (a removed profile's sockets), dropped with vpnd running or not.
            [.namedCounter("stale_marks"), .verdict(.drop)],
        ])
        // No route list routes them into a tunnel, and no tunnel address is known yet to keep
        // in its tunnel (TransportRulesTests).
        #expect(state.nft.chain(named: "unmarked")?.rules.isEmpty == true)
        #expect(state.nft.set(named: "egress_marks")?.elements == [
            NftElement(key: .mark(0x0100_0000), verdict: .jump("egress_work")),
            NftElement(key: .mark(0x0200_0000), verdict: .jump("egress_home")),
            // The built-in tunnels' own sockets carry it, bypass slice or not.
            NftElement(key: .mark(0x7f00_0000), verdict: .jump("bypassed")),
        ])
        #expect(state.nft.chain(named: "bypassed")?.rules.last?.statements == [.verdict(.accept)])
        #expect(state.nft.chains.compactMap(\.base).map(\.hook) == [.postrouting, .input], "no output or prerouting chain: a member's packet meets two")
        #expect(!statements(state.nft).contains(where: tracksConnections), "nothing makes the kernel track connections or NAT")
    }

    @Test func killswitchDropsOnlyForProfilesThatWantIt() throws {
        let state = Planner.plan(policy, facts: RuntimeFacts())
        #expect(try #require(state.nft.chain(named: "egress_work")).rules.map(\.statements) == [
            [.namedCounter("work_sent")],
            // The tunnel's own transport never enters it (TransportRules).
            [.transportProtocol(17), .outputInterfaceName("wg0", negated: false), .verdict(.jump("loop_work"))],
            [.outputInterfaceName("wg0", negated: false), .namedCounter("work_tunnel"), .verdict(.accept)],
            [.toLoopback, .verdict(.accept)],
            [.namedCounter("work_dropped"), .verdict(.drop)],
        ])
        let home = try #require(state.nft.chain(named: "egress_home"))
        #expect(!home.rules.contains { $0.statements.contains(.verdict(.drop)) })
        #expect(home.rules.last?.statements == [.verdict(.accept)], "a verdict of its own: what falls back to the killswitch is a stale mark")
    }

    @Test func tunnelDownKeepsOnlyTheDeadEnd() {
        let down = RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: false, isRunning: false, mtu: 1420)])
        // The DNS tables' routes do not depend on a tunnel (DNSRoutingTests).
        let routes = Planner.plan(policy, facts: down).routes.filter { $0.table < 7301 + 131072 }
        #expect(routes.allSatisfy { $0.kind == .unreachable && $0.table == 7301 })
        #expect(routes.count == 2)
    }

    /// Listeners: a new connection or a datagram to a member's socket is looked up by the
    /// socket's cgroup; from the tunnel (counted) or loopback it comes in, from elsewhere it
    /// is dropped (killswitch). The rest of a TCP connection and ICMP are not looked at; the
    /// tunnels' own transport, the bulk of what arrives, is let in by the first rule.
    @Test func membersAcceptConnectionsThroughTheirTunnelOnly() throws {
        let state = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-home.slice": 102]))
        let inbound = try #require(state.nft.chain(named: "inbound"))
        #expect(inbound.base == NftBaseChain(kind: .filter, hook: .input, priority: 0))
        #expect(inbound.rules.map(\.statements) == [
            [.destinationPortInSet(.udp, set: "tunnel_transport"), .verdict(.accept)],
            [.fromLoopback, .verdict(.goto("inbound_loopback"))],
            [.inputInterfaceVerdictMap(map: "inbound_tunnels")],
            [.tcpSynWithoutAck(negated: true), .verdict(.accept)],
            [.transportProtocol(1), .verdict(.accept)],
            [.transportProtocol(58), .verdict(.accept)],
            [.cgroupVerdictMap(level: 5, map: "listen_level_5")],
            [.cgroupVerdictMap(level: 2, map: "listen_level_2")],
        ])
        // Loopback: in, but for a steered DNS query for any socket but a proxy's, which is
        // refused, UDP and TCP (DNSRoutingTests).
        #expect(state.nft.chain(named: "inbound_loopback")?.rules.map(\.statements) == [
            [.sourceNetwork(DNSSteering.prefix), .verdict(.goto("steered_dns"))],
            [.sourceNetwork(DNSSteering.prefix6), .verdict(.goto("steered_dns"))],
            [.verdict(.accept)],
        ])
        #expect(state.nft.chain(named: "steered_dns")?.rules.map(\.statements) == [
            [.socketMarkMatch(value: 0x8000_0000, negated: false), .verdict(.accept)],
            [.tcpSynWithoutAck(negated: false), .reject(tcpReset: true)],
            [.transportProtocol(17), .reject(tcpReset: false)],
            [.verdict(.accept)],
        ])
        #expect(state.nft.set(named: "inbound_tunnels")?.elements == [
            NftElement(key: .interface("tun0"), verdict: .jump("inbound_home")), NftElement(key: .interface("wg0"), verdict: .jump("inbound_work")),
        ])
        #expect(state.nft.chain(named: "inbound_work")?.rules.map(\.statements) == [[.namedCounter("work_received"), .verdict(.accept)]])
        #expect(state.nft.set(named: "listen_level_2")?.elements == [
            NftElement(key: .cgroup(id: 101, path: "vpn.slice/vpn-work.slice"), verdict: .jump("listen_work")),
            NftElement(key: .cgroup(id: 102, path: "vpn.slice/vpn-home.slice"), verdict: .jump("listen_home")),
        ])
        #expect(state.nft.chain(named: "listen_work")?.rules.map(\.statements) == [[.namedCounter("work_dropped"), .verdict(.drop)]])
        #expect(state.nft.chain(named: "listen_home")?.rules.isEmpty == true, "without a killswitch nothing is dropped")
    }

    /// allow_lan and route.networks are routes in the profile's table (a member's socket
    /// gets the LAN's route and address when it connects); the killswitch lets the LAN
    /// pass, counted as direct, but never a network that stays in the tunnel.
    @Test func lanGoesDirectAndRouteNetworksIntoTheTunnel() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.allowLAN = true
        work.routeNetworks = [IPPrefix("10.20.0.0/16")!, IPPrefix("fd00:20::/48")!]
        var home = profile("home", tunnel: "tun0", index: 2)
        home.routeNetworks = [IPPrefix("198.51.100.0/24")!]
        let facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101], links: up, tunnelNetworks: ["wg0": [IPPrefix("10.99.1.0/24")!]])
        let state = Planner.plan(Policy(profiles: [work, home]), facts: facts)
        let table7301 = state.routes.filter { $0.table == 7301 && $0.destination.length > 0 }
        #expect(table7301.contains(Route(destination: IPPrefix("10.20.0.0/16")!, table: 7301, kind: .device(index: 7), metric: 1, protocolNumber: 118)))
        #expect(table7301.contains(Route(destination: IPPrefix("10.20.0.0/16")!, table: 7301, kind: .unreachable, metric: 2, protocolNumber: 118)))
        #expect(table7301.contains(Route(destination: IPPrefix("10.0.0.0/8")!, table: 7301, kind: .fallThrough, metric: .max - 1, protocolNumber: 118)))
        #expect(table7301.contains(Route(destination: IPPrefix("fe80::/10")!, table: 7301, kind: .fallThrough, metric: .max - 1, protocolNumber: 118)))
        // route.networks without allow_lan: routes too (non-members reach them by the table).
        #expect(state.routes.contains(Route(destination: IPPrefix("198.51.100.0/24")!, table: 7302, kind: .unreachable, metric: 2, protocolNumber: 118)))
        #expect(!state.routes.contains { $0.table == 7302 && $0.kind == .fallThrough })

        #expect(try #require(state.nft.chain(named: "egress_work")).rules.map(\.statements).suffix(5) == [
            [.destinationInSet(ipv4: true, set: "tunnel_dst4_work", negated: false), .namedCounter("work_dropped"), .verdict(.drop)],
            [.destinationInSet(ipv4: false, set: "tunnel_dst6_work", negated: false), .namedCounter("work_dropped"), .verdict(.drop)],
            [.destinationInSet(ipv4: true, set: "lan4", negated: false), .namedCounter("work_direct"), .verdict(.accept)],
            [.destinationInSet(ipv4: false, set: "lan6", negated: false), .namedCounter("work_direct"), .verdict(.accept)],
            [.namedCounter("work_dropped"), .verdict(.drop)],
        ])
        #expect(state.nft.set(named: "tunnel_dst4_work")?.elements.map(\.key) == [.prefix(IPPrefix("10.20.0.0/16")!), .prefix(IPPrefix("10.99.1.0/24")!)])
        #expect(state.nft.set(named: "lan4")?.elements.map(\.key) == ExceptionRulesRanges.lan4.map { .prefix(IPPrefix($0)!) })
        #expect(state.nft.set(named: "lan4")?.interval == true)
        #expect(state.nft.set(named: "multicast4") == nil, "multicast only with allow_multicast")
        // From the LAN to a member's listener: let in (a tunnel destination never).
        #expect(state.nft.chain(named: "listen_work")?.rules.map(\.statements).prefix(3) == [
            [.sourceInSet(ipv4: true, set: "tunnel_dst4_work", negated: false), .namedCounter("work_dropped"), .verdict(.drop)],
            [.sourceInSet(ipv4: false, set: "tunnel_dst6_work", negated: false), .namedCounter("work_dropped"), .verdict(.drop)],
            [.sourceInSet(ipv4: true, set: "lan4", negated: false), .verdict(.accept)],
        ])
        #expect(!statements(state.nft).contains(where: tracksConnections))
    }

    /// Members' DNS goes to their proxy at the socket (no nft rule); bypass.domains and
    /// route.domains are sets the proxy fills, whose addresses become routes (LearnedRoutes);
    /// the killswitch lets a member's bypassed address pass.
    @Test func domainSetsAndWhatTheirAddressesBecome() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try DomainPattern("bank.example")]
        work.routeDomains = [try DomainPattern("*.corp.example")]
        let policy = Policy(profiles: [work, profile("home", tunnel: "tun0", index: 2)])
        let state = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101], links: up))
        for set in ["bypass_dns4_work", "bypass_dns6_work", "tunneled_dns4_work", "tunneled_dns6_work", "route_dns4_work", "route_dns6_work"] {
            #expect(state.nft.set(named: set)?.timeout == true, "\(set)")
        }
        #expect(state.nft.set(named: "tunneled_dns4_home") == nil && state.nft.set(named: "bypass_dns4_home") == nil)
        #expect(state.learnedRoutes == [
            LearnedRoutes(set: "bypass_dns4_work", ipv4: true, table: 7301, kind: .bypass(tunneledSet: "tunneled_dns4_work", tunnelDestinations: []),
                          mark: 0x0100_0000, mask: mask),
            LearnedRoutes(set: "route_dns4_work", ipv4: true, table: 7301 + 65536, kind: .tunnel(device: 7, holds: true), mark: 0x0100_0000, mask: mask),
            LearnedRoutes(set: "bypass_dns6_work", ipv4: false, table: 7301, kind: .bypass(tunneledSet: "tunneled_dns6_work", tunnelDestinations: []),
                          mark: 0x0100_0000, mask: mask),
            LearnedRoutes(set: "route_dns6_work", ipv4: false, table: 7301 + 65536, kind: .tunnel(device: 7, holds: true), mark: 0x0100_0000, mask: mask),
        ])
        #expect(try #require(state.nft.chain(named: "egress_work")).rules.map(\.statements).suffix(3) == [
            [.destinationInSet(ipv4: true, set: "bypass_dns4_work", negated: false), .namedCounter("work_direct"), .verdict(.accept)],
            [.destinationInSet(ipv4: false, set: "bypass_dns6_work", negated: false), .namedCounter("work_direct"), .verdict(.accept)],
            [.namedCounter("work_dropped"), .verdict(.drop)],
        ])
        // route.domains: non-members reach the addresses through the route-list table (RoutingPlanTests).
        #expect(state.rules.contains { $0.priority == 7303 && $0.table == 7301 + 65536 })
        // Encrypted DNS is refused at the socket: for work (its bypass.domains) and home
        // (whose proxy fills work's route.domains sets too).
        #expect(state.socketPrograms.first { $0.cgroup == "vpn.slice/vpn-work.slice" }?.settings.refuseEncryptedDNS == true)
        #expect(!statements(state.nft).contains(where: tracksConnections))
    }

    /// Encrypted DNS is refused only where domain rules apply, and not where the profile
    /// allows it.
    @Test func encryptedDNSIsRefusedWhereDomainRulesApply() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try DomainPattern("bank.example")]
        work.allowEncryptedDNS = true
        let home = profile("home", tunnel: "tun0", index: 2)
        let ids = ["vpn.slice/vpn-work.slice": UInt64(101), "vpn.slice/vpn-home.slice": 102]
        let settings = { (state: DesiredState, path: String) in state.socketPrograms.first { $0.cgroup == path }?.settings }
        let allowed = Planner.plan(Policy(profiles: [work, home]), facts: RuntimeFacts(cgroupIDs: ids))
        #expect(settings(allowed, "vpn.slice/vpn-work.slice")?.refuseEncryptedDNS == false)
        #expect(settings(allowed, "vpn.slice/vpn-home.slice")?.refuseEncryptedDNS == false, "home's proxy fills no set")
        work.allowEncryptedDNS = false
        let refused = Planner.plan(Policy(profiles: [work, home]), facts: RuntimeFacts(cgroupIDs: ids))
        #expect(settings(refused, "vpn.slice/vpn-work.slice")?.refuseEncryptedDNS == true)
        #expect(settings(refused, "vpn.slice/vpn-home.slice")?.refuseEncryptedDNS == false)
    }

    /// With bypass.domains, the tunnel's own networks and route.networks stay in the tunnel:
    /// a learned address inside them gets no throw.
    @Test func routeNetworksWinOverBypassedNamesForMembers() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try DomainPattern("bank.example")]
        work.routeNetworks = [IPPrefix("192.0.2.0/24")!]
        let state = Planner.plan(Policy(profiles: [work]), facts: RuntimeFacts(tunnelNetworks: ["wg0": [IPPrefix("10.99.1.0/24")!]]))
        let bypass = try #require(state.learnedRoutes.first { $0.set == "bypass_dns4_work" })
        #expect(bypass.routes(for: IPAddress("192.0.2.7")!, tunneled: false).isEmpty)
        #expect(bypass.routes(for: IPAddress("10.99.1.9")!, tunneled: false).isEmpty)
        #expect(bypass.routes(for: IPAddress("198.51.100.30")!, tunneled: false) == [
            Route(destination: IPPrefix("198.51.100.30/32")!, table: 7301, kind: .fallThrough, metric: 5, protocolNumber: 119),
        ])
        #expect(bypass.routes(for: IPAddress("198.51.100.30")!, tunneled: true).isEmpty, "shared with a name that is not bypassed: the tunnel wins")
    }

    /// System mode: a socket with no mark at all is the system profile's, by a rule to its
    /// table (after the tunnels' own transports and DHCP); the killswitch and the input hook
    /// hold it; the link's own protocols and the transports pass.
    @Test func systemModeTakesSocketsWithoutAMark() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.allowLAN = true
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-bypass.slice": 102], links: up)
        facts.rootCgroupID = 1
        facts.tunnelTransports["wg0"] = TunnelTransport(source: .wireguardSocket, udpPort: 51820, owner: 0)
        let policy = Policy(profiles: [work], system: SystemSettings(profile: "work"))
        #expect(Planner.cgroups(policy, parent: "vpn.slice") == ["vpn.slice/vpn-work.slice", "vpn.slice/vpn-bypass.slice"])
        let state = Planner.plan(policy, facts: facts)
        let unmarked = state.rules.filter { $0.ipv4 && $0.priority > 7301 }
        #expect(unmarked == [
            RoutingRule(ipv4: true, priority: 7302, mark: 0, mask: .max, table: 0, protocolNumber: 118, action: .goto(priority: 7305),
                        inputInterface: "lo", ipProtocol: 17, sourcePorts: 51820...51820, uidRange: 0...0),
            RoutingRule(ipv4: true, priority: 7302, mark: 0, mask: .max, table: 0, protocolNumber: 118, action: .goto(priority: 7305),
                        inputInterface: "lo", ipProtocol: 17, sourcePorts: 68...68, destinationPorts: 67...67),
            RoutingRule(ipv4: true, priority: 7304, mark: 0, mask: .max, table: 7301, protocolNumber: 118, inputInterface: "lo"),
            RoutingRule(ipv4: true, priority: 7305, mark: 0, mask: 0, table: 0, protocolNumber: 118, action: .nop),
        ])
        #expect(state.rules.contains { !$0.ipv4 && $0.sourcePorts == 546...546 }, "DHCPv6")
        let unmarkedGuard = try #require(state.nft.chain(named: "unmarked")).rules.map(\.statements)
        #expect(unmarkedGuard.last == [.markMatch(mask: .max, value: 0, negated: false), .verdict(.jump("system_egress"))])
        #expect(try #require(state.nft.chain(named: "system_egress")).rules.map(\.statements) == [
            [.sourcePortInSet(.udp, set: "tunnel_transport"), .socketUserInSet("tunnel_transport_owners"), .verdict(.accept)],
            [.transportProtocol(2), .verdict(.accept)],
            [.icmpv6Types(130...137), .verdict(.accept)], [.icmpv6Types(143...143), .verdict(.accept)],
            [.udpPorts(source: 68, destination: 67), .verdict(.accept)], [.udpPorts(source: 546, destination: 547), .verdict(.accept)],
            [.verdict(.goto("egress_work"))],
        ])
        let input = try #require(state.nft.chain(named: "inbound")).rules.map(\.statements)
        #expect(input.last == [.socketMarkMatch(value: 0, negated: false), .verdict(.jump("system_listen"))])
        #expect(state.nft.chain(named: "system_listen")?.rules.last?.statements == [.verdict(.goto("listen_work"))])
        // Its DNS: routed by rules for sockets without a mark, UDP and TCP (DNSRouting); the
        // root cgroup gets no program for it (nor for port 853: no domain rules here).
        let dns = state.rules.filter { $0.ipv4 && $0.priority == 0 && $0.destinationPorts == 53...53 }
        #expect(dns.map(\.ipProtocol) == [17, 6] && dns.allSatisfy { $0.mark == 0 && $0.mask == .max && $0.table == 7301 + 131_072 }, "\(dns)")
        #expect(state.socketPrograms.first { $0.cgroup == "" } == nil)
        #expect(state.socketPrograms.first { $0.cgroup == "vpn.slice/vpn-bypass.slice" }?.settings == SocketSettings(mark: 0x7f00_0000, mask: mask),
                "the bypass slice: born with the bypass mark, the host's DNS")
        #expect(!statements(state.nft).contains(where: tracksConnections))
    }

    /// In system mode a bypassed program leaves wherever it runs, unless it is in another
    /// profile or already out; outside system mode only from its profile.
    @Test func bypassedProgramsInSystemMode() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassExecutables = ["/usr/bin/steam"]
        let home = profile("home", tunnel: "tun0", index: 2)
        let off = Policy(profiles: [work, home])
        var on = off
        on.system = SystemSettings(profile: "work")
        let decide = { (policy: Policy, cgroup: String) in
            ExecutableRules.decide(executable: "/usr/bin/steam", cgroup: cgroup, policy: policy, parent: "vpn.slice", user: { ExecutableUserTests.root })
        }
        #expect(decide(off, "user.slice/user-1000.slice/session-2.scope") == nil)
        #expect(decide(on, "user.slice/user-1000.slice/session-2.scope") == .bypass(from: "work"))
        #expect(decide(on, "vpn.slice/vpn-work.slice") == .bypass(from: "work"))
        #expect(decide(on, "vpn.slice/vpn-home.slice") == nil, "a member of another profile stays there")
        #expect(decide(on, "vpn.slice/vpn-bypass.slice") == nil)
    }

    @Test func emptyPolicyPlansAnEmptyTable() {
        let state = Planner.plan(Policy(profiles: []), facts: RuntimeFacts(cgroupsAlongParent: ["vpn.slice": 1]))
        #expect(state.rules.isEmpty && state.routes.isEmpty && state.sysctls.isEmpty && state.socketPrograms.isEmpty)
        #expect(state.nft.chains.isEmpty && state.nft.sets.isEmpty && state.nft.counters.isEmpty, "no profiles, no rules: nothing of ours in the way")
    }

    @Test func planTextListsEverything() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.routeDomains = [try! DomainPattern("*.corp.example")]
        let facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101], links: up)
        let text = PlanText.render(Planner.plan(Policy(profiles: [work]), facts: facts), interfaceNames: [7: "wg0"])
        #expect(text.contains("table inet vpnexec {"))
        #expect(text.contains("# ip -4 rule add priority 7300 fwmark 0x1000000/0x7f000000 table 7301 proto 118"))
        #expect(text.contains("# ip -4 rule add priority 7303 fwmark 0x0/0xffffffff iif lo table 72837 proto 118"))
        #expect(text.contains("# ip -6 route add default dev wg0 table 7301 metric 1 proto 118"))
        #expect(text.contains("# ip -4 route add unreachable default table 7301 metric 4294967295 proto 118"))
        #expect(text.contains("# net.ipv4.conf.wg0.rp_filter = 2"))
        #expect(text.contains("oifname \"wg0\" counter name \"work_tunnel\" accept"))
        #expect(text.contains("# vpn.slice/vpn-work.slice (id 101): mark 0x1000000, packets without a profile's mark dropped, port 853 refused"), "\(text)")
        #expect(text.contains("# @route_dns4_work -> table 72837: ADDRESS dev wg0 metric 3, unreachable ADDRESS metric 4"))
    }
}

/// The ranges allow_lan opens, written out here so that a change to them shows in review.
enum ExceptionRulesRanges {
    static let lan4 = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]
}

/// Units that join a profile by their cgroup's name: a user's vpn-NAME.slice, a listed
/// desktop app's scope; each only for a user the profile allows.
@Suite struct UnitCgroupsTests {
    let policy: Policy = {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.access = Access(users: [Principal(name: "alice", id: 1000)], groups: [Principal(name: "vpn", id: 2000)],
                             location: SourceLocation(file: "/p/t.toml", line: 3, column: 1))
        work.apps = ["org.mozilla.firefox", "org.gnome-thing.App"]
        return Policy(profiles: [work])
    }()

    func decide(_ path: String, groups: [UInt32] = []) -> UnitCgroups.Decision? {
        UnitCgroups.decide(path, policy: policy, parent: "vpn.slice", groups: { _ in groups })
    }

    @Test func desktopConventionNames() {
        #expect(UnitCgroups.appID(ofUnit: "app-gnome-org.mozilla.firefox-4242.scope") == "org.mozilla.firefox")
        #expect(UnitCgroups.appID(ofUnit: "app-org.kde.konsole-4242.scope") == "org.kde.konsole")
        #expect(UnitCgroups.appID(ofUnit: "app-flatpak-org.gnome\\x2dthing.App-77.scope") == "org.gnome-thing.App")
        #expect(UnitCgroups.appID(ofUnit: "app-gnome-org.mozilla.firefox@b3c2.service") == "org.mozilla.firefox")
        #expect(UnitCgroups.appID(ofUnit: "app-org.mozilla.firefox.service") == "org.mozilla.firefox")
        #expect(UnitCgroups.appID(ofUnit: "app.slice") == nil && UnitCgroups.appID(ofUnit: "app-4242.scope") == nil)
        #expect(UnitCgroups.appID(ofUnit: "session-3.scope") == nil && UnitCgroups.appID(ofUnit: "app-a-b-c-1.scope") == nil)
    }

    @Test func joinsOnlyForAllowedUsers() {
        let user = "user.slice/user-1000.slice/user@1000.service"
        #expect(decide("\(user)/app.slice/app-gnome-org.mozilla.firefox-4242.scope") == .member(profile: "work"))
        #expect(decide("\(user)/vpn.slice/vpn-work.slice") == .member(profile: "work"))
        #expect(decide("user.slice/user-1001.slice/user@1001.service/vpn.slice/vpn-work.slice", groups: [2000]) == .member(profile: "work"),
                "allowed by group")
        let refused = decide("user.slice/user-1001.slice/user@1001.service/vpn.slice/vpn-work.slice", groups: [5])
        #expect(refused == .refused(profile: "work", uid: 1001, rule: "the rule at /p/t.toml:3:1 allows user alice (1000), group vpn (2000)"))
        #expect(decide("system.slice/app-gnome-org.mozilla.firefox-1.scope") == .member(profile: "work"), "the system manager's: root's")
        #expect(decide("\(user)/app.slice/app-gnome-org.example.Other-1.scope") == nil)
        #expect(decide("\(user)/vpn.slice/vpn-nosuch.slice") == nil)
        #expect(decide("user.slice/vpn-work.slice") == nil, "a profile slice outside a user manager is not a user's")
        #expect(decide("vpn.slice/vpn-work.slice") == nil, "the profile's own cgroup decides already")
    }

    @Test func joinedCgroupsAreMembersAtTheirLevel() throws {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.joinedCgroups["user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.mozilla.firefox-1.scope"] =
            RuntimeFacts.JoinedCgroup(profile: "work", id: 555)
        let state = Planner.plan(policy, facts: facts)
        let scope = "user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.mozilla.firefox-1.scope"
        #expect(state.socketPrograms.first { $0.cgroup == scope } == SocketProgramAttachment(
            cgroup: scope, id: 555, settings: SocketSettings(mark: 0x0100_0000, mask: 0x7f00_0000, guardMarks: [0x0100_0000], guardNamespace: true)),
                "born with the profile's mark, guarded")
        #expect(state.nft.set(named: "listen_level_5")?.elements == [
            NftElement(key: .cgroup(id: 555, path: scope), verdict: .jump("listen_work")),
        ])
        let input = try #require(state.nft.chain(named: "inbound")).rules.map(\.statements)
        let five = try #require(input.firstIndex(of: [.cgroupVerdictMap(level: 5, map: "listen_level_5")]))
        let two = try #require(input.firstIndex(of: [.cgroupVerdictMap(level: 2, map: "listen_level_2")]))
        #expect(five < two, "the deeper cgroup is looked up first")
    }

    /// A unit that joins where systemd puts them changes only map elements, which vpnd
    /// applies as element edits: no rule of the table is rewritten.
    @Test func joinsAtSystemdsDepthsChangeOnlyElements() {
        let facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        func shape(joining paths: [String]) -> ([NftChain], [String]) {
            var joined = facts
            for (offset, path) in paths.enumerated() { joined.joinedCgroups[path] = RuntimeFacts.JoinedCgroup(profile: "work", id: 600 + UInt64(offset)) }
            let table = Planner.plan(policy, facts: joined).nft
            return (table.chains, table.sets.map(\.name))
        }
        let before = shape(joining: [])
        let user = "user.slice/user-1000.slice/user@1000.service"
        let usual = shape(joining: ["system.slice/app-gnome-org.mozilla.firefox-1.scope", "\(user)/app.slice/app-gnome-org.mozilla.firefox-2.scope",
                                    "\(user)/vpn.slice/vpn-work.slice"])
        #expect(usual.0 == before.0 && usual.1 == before.1)
        let nested = shape(joining: ["\(user)/app.slice/app-org.gnome.Terminal.slice/app-gnome-org.mozilla.firefox-3.scope"])
        #expect(nested.1.contains("listen_level_6") && nested.0 != before.0, "another depth gets a map and a rule of its own")
    }
}

/// A file listed under several names (hard links, a symbolic link and its target) is
/// decided by all of them, a route rule first; an exec vpnd could not place in time is
/// refused for route.executables and allowed for bypass.executables.
@Suite struct ExecutableNamesTests {
    @Test func everyNameOfTheFileCounts() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.routeExecutables = ["/usr/bin/firefox-esr"]
        work.bypassExecutables = ["/usr/bin/steam"]
        let policy = Policy(profiles: [work])
        let shell = "user.slice/user-1000.slice/session-2.scope"
        func decide(_ names: [String], in cgroup: String) -> ExecutableRules.Decision? {
            ExecutableRules.decide(executables: names, cgroup: cgroup, policy: policy, parent: "vpn.slice", user: { ExecutableUserTests.root })
        }
        #expect(decide(["/usr/lib/firefox-esr/firefox-esr", "/usr/bin/firefox-esr"], in: shell) == .join(profile: "work"))
        #expect(decide(["/usr/lib/firefox-esr/firefox-esr"], in: shell) == nil)
        #expect(decide(["/usr/bin/steam", "/usr/bin/firefox-esr"], in: "vpn.slice/vpn-work.slice") == nil,
                "routed and already in its profile: the route rule decides")
        #expect(decide(["/usr/games/steam", "/usr/bin/steam"], in: "vpn.slice/vpn-work.slice") == .bypass(from: "work"))
        #expect(ExecutableRules.lateAnswer(executables: ["/usr/bin/firefox-esr"], policy: policy) == .refuse)
        #expect(ExecutableRules.lateAnswer(executables: ["/usr/bin/steam"], policy: policy) == .allow)
        #expect(ExecutableRules.lateAnswer(executables: [], policy: policy) == .allow)
    }
}

/// A bypass by executable is granted to whom may bypass at all, the users `vpnexec --bypass`
/// lets out (root, `[system] bypass.users`, `bypass.groups`), in a profile and in system mode
/// alike: whoever runs a bypassed program can make it run any code (LD_PRELOAD), so anyone
/// else's launch stays where it is, with the rule that refused it.
@Suite struct ExecutableUserTests {
    static let root = Credentials(uid: 0, groups: [0])
    static let alice = Credentials(uid: 1000, groups: [1000])
    static let gamer = Credentials(uid: 1002, groups: [1002, 600])
    static let mallory = Credentials(uid: 1001, groups: [1001, 27])
    static let rule = SourceLocation(file: "/p/10.toml", line: 9, column: 1)

    static func policy(system: String?, bypass: Access?) -> Policy {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassExecutables = ["/usr/bin/steam", "/usr/games/steam"]
        work.routeExecutables = ["/usr/bin/firefox-esr"]
        return Policy(profiles: [work, profile("home", tunnel: "tun0", index: 2)], system: SystemSettings(profile: system, bypass: bypass))
    }

    static let named = Access(users: [Principal(name: "alice", id: 1000)], groups: [Principal(name: "games", id: 600)], location: rule)

    static func decide(_ policy: Policy, _ who: Credentials?, in cgroup: String, names: [String] = ["/usr/games/steam"]) -> ExecutableRules.Decision? {
        ExecutableRules.decide(executables: names, cgroup: cgroup, policy: policy, parent: "vpn.slice", user: { who })
    }

    @Test func onlyWhomMayBypassIsMovedOut() {
        let session = "user.slice/user-1001.slice/session-2.scope"
        for (policy, cgroup, mode) in [(Self.policy(system: nil, bypass: Self.named), "vpn.slice/vpn-work.slice", "a profile's member"),
                                       (Self.policy(system: "work", bypass: Self.named), session, "system mode")] {
            #expect(Self.decide(policy, Self.root, in: cgroup) == .bypass(from: "work"), "\(mode): root")
            #expect(Self.decide(policy, Self.alice, in: cgroup) == .bypass(from: "work"), "\(mode): a user [system] bypass.users names")
            #expect(Self.decide(policy, Self.gamer, in: cgroup) == .bypass(from: "work"), "\(mode): in a group bypass.groups names (a supplementary one)")
            #expect(Self.decide(policy, Self.mallory, in: cgroup, names: ["/usr/games/steam", "/usr/bin/steam"])
                    == .bypassRefused(from: "work", program: "/usr/bin/steam", rule: "the rule at /p/10.toml:9:1 allows user alice (1000), group games (600)"),
                    "\(mode): anyone else stays, and the rule says who may; the program is the profile's first listed name of the file")
            #expect(Self.decide(policy, nil, in: cgroup) == .bypassRefused(from: "work", program: "/usr/games/steam", rule: "its user and groups could not be read"),
                    "\(mode): unreadable credentials refuse")
        }
        let appMode = Self.policy(system: nil, bypass: nil)
        #expect(Self.decide(appMode, Self.root, in: "vpn.slice/vpn-work.slice") == .bypass(from: "work"))
        #expect(Self.decide(appMode, Self.alice, in: "vpn.slice/vpn-work.slice")
                == .bypassRefused(from: "work", program: "/usr/games/steam", rule: "no policy file sets [system] bypass.users or bypass.groups, so only root may"),
                "without [system] bypass only root's launches are moved, as only root may vpnexec --bypass")
    }

    /// Who runs the program is read only when it matters: every exec on the machine comes
    /// through the decision (exec events), and a route rule or a process that stays is
    /// decided without reading anything.
    @Test func theUserIsReadOnlyForABypass() {
        let policy = Self.policy(system: nil, bypass: Self.named)
        var reads = 0
        func decide(_ names: [String], in cgroup: String) -> ExecutableRules.Decision? {
            ExecutableRules.decide(executables: names, cgroup: cgroup, policy: policy, parent: "vpn.slice", user: { reads += 1; return Self.mallory })
        }
        #expect(decide(["/usr/bin/firefox-esr"], in: "user.slice") == .join(profile: "work"), "a route rule is everyone's")
        #expect(decide(["/usr/bin/steam"], in: "user.slice") == nil, "outside the profile, not system mode: nothing to bypass")
        #expect(decide(["/usr/bin/steam"], in: "vpn.slice/vpn-home.slice") == nil, "another profile's member")
        #expect(decide(["/usr/bin/ls"], in: "vpn.slice/vpn-work.slice") == nil)
        #expect(reads == 0)
        #expect(decide(["/usr/bin/steam"], in: "vpn.slice/vpn-work.slice/vpnd-placed") != nil && reads == 1)
    }

    /// `vpnctl check` and vpnd say when a bypass list can only serve root.
    @Test func aBypassListOnlyRootCanTakeIsWarnedOf() {
        let at = SourceLocation(file: "/p/10.toml", line: 4, column: 23)
        func withLocations(_ policy: Policy) -> Policy {
            var policy = policy
            policy.profiles[0].executableLocations = ["/usr/bin/steam": SourceLocation(file: "/p/10.toml", line: 5, column: 3), "/usr/games/steam": at]
            return policy
        }
        #expect(withLocations(Self.policy(system: "work", bypass: nil)).bypassExecutablesWarnings == [
            "/p/10.toml:4:23: warning: profile \"work\": bypass.executables go direct only when root starts them: no policy file sets [system] bypass.users or bypass.groups (who may bypass, as for vpnexec --bypass); anyone else's launch stays in the tunnel",
        ])
        let nobody = Access(users: [], groups: [], location: Self.rule)
        #expect(withLocations(Self.policy(system: nil, bypass: nobody)).bypassExecutablesWarnings.first?.contains("the rule at /p/10.toml:9:1 names no user or group") == true)
        #expect(withLocations(Self.policy(system: nil, bypass: Self.named)).bypassExecutablesWarnings.isEmpty)
        #expect(Policy(profiles: [profile("work", tunnel: "wg0", index: 1)]).bypassExecutablesWarnings.isEmpty, "no bypass list, nothing to say")
    }
}
