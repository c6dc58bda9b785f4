import Addresses
import DNS
import Nftables
import Plan
import Policy
import Routing
import Testing

func profile(_ name: String, tunnel: String, index: UInt32, killswitch: Bool = true) -> Profile {
    let here = SourceLocation(file: "/p/t.toml", line: 1, column: 1)
    return Profile(name: name, location: here, tunnel: .interface(tunnel),
                   access: Access(users: [], groups: [], location: here),
                   killswitch: killswitch, index: index, table: 7300 + index)
}

@Suite struct PlannerTests {
    let policy = Policy(profiles: [profile("work", tunnel: "wg0", index: 1), profile("home", tunnel: "tun0", index: 2, killswitch: false)])

    @Test func cgroupMarkRoutePath() throws {
        let facts = RuntimeFacts(cgroupParent: "vpn.slice",
                                 cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-home.slice": 102],
                                 links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)])
        let state = Planner.plan(policy, facts: facts)
        #expect(state.cgroups == ["vpn.slice/vpn-work.slice", "vpn.slice/vpn-home.slice"])

        // cgroup -> member chain
        let levelTwo = try #require(state.nft.set(named: "cgroup_level_2"))
        #expect(levelTwo.key == .cgroupv2)
        #expect(levelTwo.elements == [
            NftElement(key: .cgroup(id: 101, path: "vpn.slice/vpn-work.slice"), verdict: .jump("member_work")),
            NftElement(key: .cgroup(id: 102, path: "vpn.slice/vpn-home.slice"), verdict: .jump("member_home")),
        ])
        let output = try #require(state.nft.chain(named: "route_output"))
        #expect(output.base == NftBaseChain(kind: .route, hook: .output, priority: -150))
        let (mask, bypass): (UInt32, UInt32) = (0x7f00_0000, 0x7f00_0000)
        #expect(output.rules.map(\.statements) == [
            // A profile tunnel's own transport first, whatever its connection decided (TransportRules).
            [.sourcePortInSet(.udp, set: "tunnel_transport"), .socketUserInSet("tunnel_transport_owners"), .verdict(.jump("tunnel_transport"))],
            // Connections decided direct before are not looked at again.
            [.conntrackMarkMatch(mask: mask, value: bypass, negated: false), .markMatch(mask: mask, value: 0, negated: false), .verdict(.accept)],
            [.conntrackMarkMatch(mask: mask, value: bypass, negated: false), .markMatch(mask: mask, value: bypass, negated: false), .verdict(.accept)],
            // ...also a socket born with a profile's mark (its packets get the bypass mark).
            [.conntrackMarkMatch(mask: mask, value: bypass, negated: false), .setMark(clear: mask, set: bypass), .verdict(.accept)],
            [.conntrackMarkVerdictMap(mask: mask, map: "connection_marks")],
            // Level 5 is empty until a user manager's unit joins (UnitCgroups.usualLevels).
            [.cgroupVerdictMap(level: 5, map: "cgroup_level_5")],
            [.cgroupVerdictMap(level: 2, map: "cgroup_level_2")],
            // No listing of the root was given: no fail-closed rules (an empty set would match all).
            [.markVerdictMap(mask: mask, map: "connection_marks")],
            // The bypass mark set by a socket (a built-in tunnel's): no profile, not even route.networks.
            [.markMatch(mask: mask, value: bypass, negated: false), .setConntrackMark(clear: mask, set: bypass), .verdict(.accept)],
            [.setConntrackMark(clear: mask, set: bypass)],
        ])

        // member chain -> mark under the mask, remembered by the connection
        let member = try #require(state.nft.chain(named: "member_work"))
        #expect(member.rules.first?.statements == [.setMark(clear: 0x7f00_0000, set: 0x0100_0000),
                                                   .setConntrackMark(clear: 0x7f00_0000, set: 0x0100_0000),
                                                   .namedCounter("work_sent"), .verdict(.accept)])

        // mark -> table (v4 and v6), table -> tunnel with a dead end of last resort
        // Unmarked lookups skip the profiles' rules: a goto past them, to a nop right after.
        #expect(state.rules == [
            RoutingRule(ipv4: true, priority: 7301, mark: 0, mask: 0, table: 0, protocolNumber: 118, action: .nop),
            RoutingRule(ipv4: true, priority: 7299, mark: 0, mask: 0x7f00_0000, table: 0, protocolNumber: 118, action: .goto(priority: 7301)),
            RoutingRule(ipv4: false, priority: 7301, mark: 0, mask: 0, table: 0, protocolNumber: 118, action: .nop),
            RoutingRule(ipv4: false, priority: 7299, mark: 0, mask: 0x7f00_0000, table: 0, protocolNumber: 118, action: .goto(priority: 7301)),
            RoutingRule(ipv4: true, priority: 7300, mark: 0x0100_0000, mask: 0x7f00_0000, table: 7301, protocolNumber: 118),
            RoutingRule(ipv4: false, priority: 7300, mark: 0x0100_0000, mask: 0x7f00_0000, table: 7301, protocolNumber: 118),
            RoutingRule(ipv4: true, priority: 7300, mark: 0x0200_0000, mask: 0x7f00_0000, table: 7302, protocolNumber: 118),
            RoutingRule(ipv4: false, priority: 7300, mark: 0x0200_0000, mask: 0x7f00_0000, table: 7302, protocolNumber: 118),
        ])
        #expect(state.routes == [
            Route(destination: .defaultRoute(ipv4: true), table: 7301, kind: .device(index: 7), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: true), table: 7301, kind: .unreachable, metric: .max, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: false), table: 7301, kind: .device(index: 7), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: false), table: 7301, kind: .unreachable, metric: .max, protocolNumber: 118),
            // "home" has no killswitch and its tunnel is missing: nothing, so lookups fall through.
        ])
        #expect(state.sysctls == [Sysctl("net/ipv4/conf/all/src_valid_mark", "1")])
    }

    @Test func killswitchDropsOnlyForProfilesThatWantIt() throws {
        let state = Planner.plan(policy, facts: RuntimeFacts())
        let work = try #require(state.nft.chain(named: "egress_work"))
        #expect(work.rules.map(\.statements) == [
            // The tunnel's own transport never enters it (TransportRules).
            [.transportProtocol(17), .outputInterfaceName("wg0", negated: false), .verdict(.jump("loop_work"))],
            [.outputInterfaceName("wg0", negated: false), .namedCounter("work_tunnel"), .verdict(.accept)],
            [.outputInterfaceName("lo", negated: false), .verdict(.accept)],
            [.namedCounter("work_dropped"), .verdict(.drop)],
        ])
        let home = try #require(state.nft.chain(named: "egress_home"))
        #expect(!home.rules.contains { $0.statements.contains(.verdict(.drop)) })
        let killswitch = try #require(state.nft.chain(named: "killswitch"))
        #expect(killswitch.base == NftBaseChain(kind: .filter, hook: .postrouting, priority: 0))
        // The packet's mark, then the connection's (which no socket option reaches).
        #expect(killswitch.rules.map(\.statements) == [[.markVerdictMap(mask: 0x7f00_0000, map: "egress_marks")],
                                                        [.conntrackMarkVerdictMap(mask: 0x7f00_0000, map: "egress_marks")]])
        #expect(state.nft.set(named: "egress_marks")?.elements == [
            NftElement(key: .mark(0x0100_0000), verdict: .jump("egress_work")),
            NftElement(key: .mark(0x0200_0000), verdict: .jump("egress_home")),
        ])
        let nat = try #require(state.nft.chain(named: "source_nat"))
        #expect(nat.rules.first?.statements == [.markMatch(mask: 0x7f00_0000, value: 0x0100_0000, negated: false),
                                                .outputInterfaceName("wg0", negated: false), .sourceIsOutputInterfaceAddress(negated: true), .masquerade])
    }

    @Test func tunnelDownKeepsOnlyTheDeadEnd() {
        let down = RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: false, isRunning: false, mtu: 1420)])
        let routes = Planner.plan(policy, facts: down).routes
        #expect(routes.allSatisfy { $0.kind == .unreachable && $0.table == 7301 })
        #expect(routes.count == 2)
    }

    @Test func missingCgroupHasNoElementAndDeeperParentsUseTheirLevel() throws {
        let facts = RuntimeFacts(cgroupParent: "system.slice/vpn.slice", cgroupIDs: ["system.slice/vpn.slice/vpn-work.slice": 5])
        let state = Planner.plan(policy, facts: facts)
        #expect(state.nft.set(named: "cgroup_level_3")?.elements.count == 1)
        #expect(state.nft.set(named: "cgroup_level_2")?.elements == [], "kept for the system manager's units, none of them a profile's cgroup")
    }

    /// A member is whoever is in the cgroup: its mark is overwritten with the profile's
    /// (whatever SO_MARK it set), and a non-member keeps none of our bits but the bypass mark.
    @Test func membershipIgnoresMarksSetBySockets() throws {
        let state = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101]))
        let output = try #require(state.nft.chain(named: "route_output"))
        #expect(!output.rules.contains { $0.statements.contains(.verdict(.return)) }, "no early return for packets that carry a mark")
        #expect(output.rules.first { $0.statements.contains(.conntrackMarkVerdictMap(mask: 0x7f00_0000, map: "connection_marks")) } != nil)
        #expect(output.rules.dropLast(2).last?.comment == "a profile's mark set by the socket")
    }

    /// Ids nobody knows where a profile cgroup (or its parent) could be are dropped: beside
    /// every level of the parent's path, and below the parent.
    @Test func unknownCgroupsAlongTheParentAreDropped() throws {
        let facts = RuntimeFacts(cgroupParent: "vpn.slice",
                                 cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-home.slice": 102],
                                 cgroupsAlongParent: ["vpn.slice": 100, "system.slice": 10, "user.slice": 11])
        let state = Planner.plan(policy, facts: facts)
        #expect(state.nft.set(named: "known_level_1")?.elements == [
            NftElement(key: .cgroup(id: 10, path: "system.slice")), NftElement(key: .cgroup(id: 11, path: "user.slice")),
            NftElement(key: .cgroup(id: 100, path: "vpn.slice")),
        ])
        let output = try #require(state.nft.chain(named: "route_output"))
        let parent = NftElementKey.cgroup(id: 100, path: "vpn.slice")
        // Right after the deepest-first member lookups (the last is level 2's).
        let rules = output.rules.map(\.statements)
        let afterLookups = try #require(rules.firstIndex(of: [.cgroupVerdictMap(level: 2, map: "cgroup_level_2")])) + 1
        #expect(Array(rules[afterLookups...].prefix(2)) == [
            [.cgroupInSet(level: 1, set: "known_level_1", negated: true), .verdict(.jump("unknown_cgroup"))],
            [.cgroupMatch(level: 1, cgroup: parent, negated: false), .verdict(.jump("unknown_cgroup"))],
        ])
        let unknown = try #require(state.nft.chain(named: "unknown_cgroup"))
        #expect(unknown.rules.map(\.statements) == [[.outputInterfaceName("lo", negated: false), .verdict(.accept)],
                                                     [.namedCounter("unknown_cgroup_dropped"), .verdict(.drop)]])
        let inbound = try #require(state.nft.chain(named: "inbound"))
        #expect(inbound.rules.map(\.statements).suffix(2) == [
            [.conntrackStateNew, .cgroupInSet(level: 1, set: "known_level_1", negated: true), .verdict(.jump("unknown_listener"))],
            [.conntrackStateNew, .cgroupMatch(level: 1, cgroup: parent, negated: false), .verdict(.jump("unknown_listener"))],
        ])

        let deep = RuntimeFacts(cgroupParent: "a.slice/vpn.slice", cgroupIDs: ["a.slice/vpn.slice/vpn-work.slice": 101],
                                cgroupsAlongParent: ["a.slice": 1, "b.slice": 2, "a.slice/vpn.slice": 3, "a.slice/x.service": 4])
        let deepOutput = try #require(Planner.plan(policy, facts: deep).nft.chain(named: "route_output"))
        let deepRules = deepOutput.rules.map(\.statements)
        let deepAfterLookups = try #require(deepRules.firstIndex(of: [.cgroupVerdictMap(level: 2, map: "cgroup_level_2")])) + 1
        #expect(Array(deepRules[deepAfterLookups...].prefix(3)) == [
            [.cgroupInSet(level: 1, set: "known_level_1", negated: true), .verdict(.jump("unknown_cgroup"))],
            [.cgroupMatch(level: 1, cgroup: .cgroup(id: 1, path: "a.slice"), negated: false),
             .cgroupInSet(level: 2, set: "known_level_2", negated: true), .verdict(.jump("unknown_cgroup"))],
            [.cgroupMatch(level: 2, cgroup: .cgroup(id: 3, path: "a.slice/vpn.slice"), negated: false), .verdict(.jump("unknown_cgroup"))],
        ])
        #expect(Planner.plan(policy, facts: deep).nft.set(named: "known_level_2")?.elements.map(\.key) == [
            .cgroup(id: 3, path: "a.slice/vpn.slice"), .cgroup(id: 4, path: "a.slice/x.service"),
        ])
        // A parent that does not exist: what is beside it is still known, nothing "below" it.
        let missing = RuntimeFacts(cgroupParent: "vpn.slice", cgroupsAlongParent: ["system.slice": 10])
        #expect(Planner.plan(policy, facts: missing).nft.set(named: "known_level_1") == nil,
                "the level's listing lacks the parent itself: it was not read after the parent was made")
    }

    /// New connections to a member's sockets: from its tunnel they become the profile's
    /// connection, from loopback they pass, from anywhere else they are dropped (killswitch).
    @Test func membersAcceptConnectionsThroughTheirTunnelOnly() throws {
        let state = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-home.slice": 102]))
        let inbound = try #require(state.nft.chain(named: "inbound"))
        #expect(inbound.base == NftBaseChain(kind: .filter, hook: .input, priority: 0))
        #expect(inbound.rules.map(\.statements) == [[.conntrackStateNew, .cgroupVerdictMap(level: 5, map: "listen_level_5")],
                                                     [.conntrackStateNew, .cgroupVerdictMap(level: 2, map: "listen_level_2")]])
        #expect(state.nft.set(named: "listen_level_2")?.elements == [
            NftElement(key: .cgroup(id: 101, path: "vpn.slice/vpn-work.slice"), verdict: .jump("listen_work")),
            NftElement(key: .cgroup(id: 102, path: "vpn.slice/vpn-home.slice"), verdict: .jump("listen_home")),
        ])
        #expect(state.nft.chain(named: "listen_work")?.rules.map(\.statements) == [
            [.inputInterfaceName("wg0", negated: false), .setConntrackMark(clear: 0x7f00_0000, set: 0x0100_0000), .verdict(.accept)],
            [.inputInterfaceName("lo", negated: false), .verdict(.accept)],
            [.namedCounter("work_dropped"), .verdict(.drop)],
        ])
        #expect(state.nft.chain(named: "listen_home")?.rules.count == 2, "without a killswitch nothing is dropped")
    }

    /// allow_lan: members' packets to the fixed private and link-local ranges go direct with
    /// the bypass mark, except the tunnel's own networks and route.networks; route.networks
    /// take anyone's new connections into the profile's tunnel.
    @Test func lanGoesDirectAndRouteNetworksIntoTheTunnel() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.allowLAN = true
        work.routeNetworks = [IPPrefix("10.20.0.0/16")!, IPPrefix("fd00:20::/48")!]
        var home = profile("home", tunnel: "tun0", index: 2)
        home.routeNetworks = [IPPrefix("198.51.100.0/24")!]
        let facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101], tunnelNetworks: ["wg0": [IPPrefix("10.99.1.0/24")!]])
        let state = Planner.plan(Policy(profiles: [work, home]), facts: facts)
        #expect(state.nft.set(named: "cgroup_level_2")?.elements.first?.verdict == .jump("classify_work"))
        #expect(state.nft.chain(named: "classify_work")?.rules.map(\.statements) == [
            [.destinationPort(.udp, 53), .verdict(.goto("member_work"))],
            [.destinationPort(.tcp, 53), .verdict(.goto("member_work"))],
            [.destinationInSet(ipv4: true, set: "tunnel_dst4_work", negated: false), .verdict(.goto("member_work"))],
            [.destinationInSet(ipv4: false, set: "tunnel_dst6_work", negated: false), .verdict(.goto("member_work"))],
            [.destinationInSet(ipv4: true, set: "lan4", negated: false), .verdict(.goto("direct_work"))],
            [.destinationInSet(ipv4: false, set: "lan6", negated: false), .verdict(.goto("direct_work"))],
            [.verdict(.goto("member_work"))],
        ])
        #expect(state.nft.set(named: "tunnel_dst4_work")?.elements.map(\.key) == [.prefix(IPPrefix("10.20.0.0/16")!), .prefix(IPPrefix("10.99.1.0/24")!)])
        #expect(state.nft.set(named: "lan4")?.elements.map(\.key) == ExceptionRulesRanges.lan4.map { .prefix(IPPrefix($0)!) })
        #expect(state.nft.set(named: "lan4")?.interval == true)
        #expect(state.nft.set(named: "multicast4") == nil, "multicast only with allow_multicast")
        #expect(state.nft.chain(named: "direct_work")?.rules.first?.statements == [
            .setMark(clear: 0x7f00_0000, set: 0x7f00_0000), .setConntrackMark(clear: 0x7f00_0000, set: 0x7f00_0000),
            .namedCounter("work_direct"), .verdict(.accept),
        ])
        #expect(state.nft.chain(named: "classify_home") == nil, "without allow_lan every member packet is marked")
        #expect(state.nft.set(named: "route_networks4")?.elements == [
            NftElement(key: .prefix(IPPrefix("10.20.0.0/16")!), verdict: .jump("member_work")),
            NftElement(key: .prefix(IPPrefix("198.51.100.0/24")!), verdict: .jump("member_home")),
        ])
        let output = try #require(state.nft.chain(named: "route_output"))
        #expect(output.rules.contains { $0.statements == [.conntrackStateNew, .destinationVerdictMap(ipv4: true, map: "route_networks4")] })
        #expect(output.rules.contains { $0.statements == [.conntrackStateNew, .destinationVerdictMap(ipv4: false, map: "route_networks6")] })
    }

    /// Members' DNS (UDP and TCP port 53, any destination) goes to their profile's proxy;
    /// bypass.domains' addresses go direct for members, route.domains' into the tunnel for
    /// anyone, both from sets the proxy fills (with timeouts).
    @Test func dnsGoesToTheProxyAndDomainSetsDecide() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try DomainPattern("bank.example")]
        work.routeDomains = [try DomainPattern("*.corp.example")]
        let policy = Policy(profiles: [work, profile("home", tunnel: "tun0", index: 2)])
        let state = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101]))
        let redirect = try #require(state.nft.chain(named: "dns_redirect"))
        #expect(redirect.base == NftBaseChain(kind: .nat, hook: .output, priority: -100))
        #expect(redirect.rules.map(\.statements) == [[.cgroupVerdictMap(level: 5, map: "dns_level_5")], [.cgroupVerdictMap(level: 2, map: "dns_level_2")]], "by cgroup: the proxy's own queries carry the mark too")
        #expect(state.nft.set(named: "dns_level_2")?.elements == [
            NftElement(key: .cgroup(id: 101, path: "vpn.slice/vpn-work.slice"), verdict: .jump("dns_work")),
        ])
        #expect(state.nft.chain(named: "dns_work")?.rules.map(\.statements) == [
            [.destinationPort(.udp, 53), .redirect(port: 5301)], [.destinationPort(.tcp, 53), .redirect(port: 5301)],
        ])
        #expect(state.nft.chain(named: "dns_home")?.rules.first?.statements == [.destinationPort(.udp, 53), .redirect(port: 5302)])
        #expect(state.nft.set(named: "bypass_dns4_work")?.timeout == true && state.nft.set(named: "bypass_dns6_work")?.key == .ipv6Address)
        let refuseDoT: (String) -> [[NftStatement]] = { profile in [
            [.destinationPort(.tcp, 853), .namedCounter("\(profile)_encrypted_dns_refused"), .reject(.tcpReset)],
            [.destinationPort(.udp, 853), .namedCounter("\(profile)_encrypted_dns_refused"), .reject(.portUnreachable)],
        ] }
        // The tunnel wins: an address answered for a name not bypassed is checked before
        // the bypass set.
        #expect(state.nft.chain(named: "classify_work")?.rules.map(\.statements) == refuseDoT("work") + [
            [.destinationPort(.udp, 53), .verdict(.goto("member_work"))],
            [.destinationPort(.tcp, 53), .verdict(.goto("member_work"))],
            [.destinationInSet(ipv4: true, set: "tunneled_dns4_work", negated: false), .verdict(.goto("member_work"))],
            [.destinationInSet(ipv4: false, set: "tunneled_dns6_work", negated: false), .verdict(.goto("member_work"))],
            [.destinationInSet(ipv4: true, set: "bypass_dns4_work", negated: false), .verdict(.goto("direct_work"))],
            [.destinationInSet(ipv4: false, set: "bypass_dns6_work", negated: false), .verdict(.goto("direct_work"))],
            [.verdict(.goto("member_work"))],
        ])
        #expect(state.nft.set(named: "tunneled_dns4_work")?.timeout == true && state.nft.set(named: "tunneled_dns6_work")?.key == .ipv6Address)
        let output = try #require(state.nft.chain(named: "route_output"))
        #expect(output.rules.contains { $0.statements == [.conntrackStateNew, .destinationInSet(ipv4: true, set: "route_dns4_work", negated: false), .verdict(.jump("member_work"))] })
        #expect(state.nft.set(named: "route_dns6_work")?.timeout == true)
        // home's proxy fills work's route.domains sets too, so its members' DoT is refused;
        // nothing of home goes direct, so that is all its classifier does.
        #expect(state.nft.chain(named: "classify_home")?.rules.map(\.statements) == refuseDoT("home") + [[.verdict(.goto("member_home"))]])
        #expect(state.nft.set(named: "cgroup_level_2")?.elements.map(\.verdict) == [.jump("classify_work")])
        #expect(state.nft.set(named: "tunneled_dns4_home") == nil && state.nft.chain(named: "direct_home") == nil)
        #expect(state.nft.counters.map(\.name).filter { $0.hasSuffix("_encrypted_dns_refused") } == ["work_encrypted_dns_refused", "home_encrypted_dns_refused"])
    }

    /// Encrypted DNS is refused only where domain rules apply, and not where the profile
    /// allows it; without any domain rule no profile classifies for it.
    @Test func encryptedDNSIsRefusedWhereDomainRulesApply() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try DomainPattern("bank.example")]
        work.allowEncryptedDNS = true
        let home = profile("home", tunnel: "tun0", index: 2)
        let allowed = Planner.plan(Policy(profiles: [work, home]), facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101]))
        #expect(allowed.nft.chain(named: "classify_work")?.rules.first?.statements == [.destinationPort(.udp, 53), .verdict(.goto("member_work"))])
        #expect(allowed.nft.chain(named: "classify_home") == nil, "home's proxy fills no set")
        #expect(allowed.nft.counters.allSatisfy { !$0.name.hasSuffix("_encrypted_dns_refused") })

        work.allowEncryptedDNS = false
        let refused = Planner.plan(Policy(profiles: [work, home], system: SystemSettings(profile: "work")), facts: RuntimeFacts())
        #expect(refused.nft.chain(named: "classify_work")?.rules.first?.statements == [.destinationPort(.tcp, 853), .namedCounter("work_encrypted_dns_refused"), .reject(.tcpReset)])
        #expect(refused.nft.chain(named: "route_output")?.rules.last?.statements == [.verdict(.jump("classify_work"))], "system mode's members too")
        #expect(refused.nft.chain(named: "classify_home") == nil)
    }

    /// With bypass.domains, the tunnel's own networks and route.networks stay in the tunnel
    /// (with or without allow_lan): an address both bypassed and routed is not bypassed.
    @Test func routeNetworksWinOverBypassedNamesForMembers() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try DomainPattern("bank.example")]
        work.routeNetworks = [IPPrefix("192.0.2.0/24")!]
        let state = Planner.plan(Policy(profiles: [work]), facts: RuntimeFacts(tunnelNetworks: ["wg0": [IPPrefix("10.99.1.0/24")!]]))
        let rules = try #require(state.nft.chain(named: "classify_work")).rules.map(\.statements)
        let stays = try #require(rules.firstIndex(of: [.destinationInSet(ipv4: true, set: "tunnel_dst4_work", negated: false), .verdict(.goto("member_work"))]))
        let bypassed = try #require(rules.firstIndex(of: [.destinationInSet(ipv4: true, set: "bypass_dns4_work", negated: false), .verdict(.goto("direct_work"))]))
        #expect(stays < bypassed)
        #expect(state.nft.set(named: "tunnel_dst4_work")?.elements.map(\.key) == [.prefix(IPPrefix("10.99.1.0/24")!), .prefix(IPPrefix("192.0.2.0/24")!)])
    }

    /// System mode: whatever no map placed is the system profile's, at the end of the
    /// route, input and DNS chains; sockets with a mark of their own, the bypass slice and
    /// the link's own protocols stay out. Without it, such packets are decided direct.
    @Test func systemModeTakesWhatNoMapPlaced() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.allowLAN = true
        let facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-bypass.slice": 102])
        let off = Planner.plan(Policy(profiles: [work]), facts: facts)
        let offOutput = try #require(off.nft.chain(named: "route_output"))
        #expect(offOutput.rules.last?.statements == [.setConntrackMark(clear: 0x7f00_0000, set: 0x7f00_0000)])
        #expect(offOutput.rules.contains { $0.statements == [.markMatch(mask: 0x7f00_0000, value: 0x7f00_0000, negated: false),
                                                              .setConntrackMark(clear: 0x7f00_0000, set: 0x7f00_0000), .verdict(.accept)] },
                "the bypass mark keeps out of every profile")
        #expect(!Planner.cgroups(Policy(profiles: [work]), parent: "vpn.slice").contains("vpn.slice/vpn-bypass.slice"))

        let policy = Policy(profiles: [work], system: SystemSettings(profile: "work"))
        #expect(Planner.cgroups(policy, parent: "vpn.slice") == ["vpn.slice/vpn-work.slice", "vpn.slice/vpn-bypass.slice"])
        let state = Planner.plan(policy, facts: facts)
        let output = try #require(state.nft.chain(named: "route_output")).rules.map(\.statements)
        let exempt: [NftStatement] = [.socketMarkMatch(value: 0, negated: true), .setConntrackMark(clear: 0x7f00_0000, set: 0x7f00_0000), .verdict(.accept)]
        let link: [[NftStatement]] = [
            [.icmpv6Types(130...137), .verdict(.accept)], [.icmpv6Types(143...143), .verdict(.accept)],
            [.transportProtocol(2), .verdict(.accept)],
        ]
        #expect(Array(output.suffix(7)) == [exempt] + link + [
            [.udpPorts(source: 68, destination: 67), .verdict(.accept)], [.udpPorts(source: 546, destination: 547), .verdict(.accept)],
            [.verdict(.jump("classify_work"))],
        ])
        #expect(state.nft.set(named: "cgroup_level_2")?.elements.contains(NftElement(key: .cgroup(id: 102, path: "vpn.slice/vpn-bypass.slice"), verdict: .jump("bypassed"))) == true)

        let input = try #require(state.nft.chain(named: "inbound")).rules.map(\.statements)
        #expect(Array(input.suffix(7)) == [[.conntrackStateNew, .socketMarkMatch(value: 0, negated: true), .verdict(.accept)]] + link + [
            [.udpPorts(source: 67, destination: 68), .verdict(.accept)], [.udpPorts(source: 547, destination: 546), .verdict(.accept)],
            [.conntrackStateNew, .verdict(.jump("listen_work"))],
        ])
        #expect(state.nft.chain(named: "listen_work")?.rules.map(\.statements).contains(
            [.sourceInSet(ipv4: true, set: "lan4", negated: false), .setConntrackMark(clear: 0x7f00_0000, set: 0x7f00_0000), .verdict(.accept)]) == true,
                "allow_lan: connections from the LAN reach members' listeners")

        let dns = try #require(state.nft.chain(named: "dns_redirect")).rules.map(\.statements)
        #expect(dns == [[.cgroupVerdictMap(level: 5, map: "dns_level_5")], [.cgroupVerdictMap(level: 2, map: "dns_level_2")], [.socketMarkMatch(value: 0, negated: true), .verdict(.accept)],
                        [.verdict(.jump("dns_work"))]])
        #expect(state.nft.set(named: "dns_level_2")?.elements.contains(NftElement(key: .cgroup(id: 102, path: "vpn.slice/vpn-bypass.slice"), verdict: .accept)) == true,
                "the bypass slice keeps the host's DNS")
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
            ExecutableRules.decide(executable: "/usr/bin/steam", cgroup: cgroup, policy: policy, parent: "vpn.slice")
        }
        #expect(decide(off, "user.slice/user-1000.slice/session-2.scope") == nil)
        #expect(decide(on, "user.slice/user-1000.slice/session-2.scope") == .bypass(from: "work"))
        #expect(decide(on, "vpn.slice/vpn-work.slice") == .bypass(from: "work"))
        #expect(decide(on, "vpn.slice/vpn-home.slice") == nil, "a member of another profile stays there")
        #expect(decide(on, "vpn.slice/vpn-bypass.slice") == nil)
    }

    @Test func emptyPolicyPlansAnEmptyTable() {
        let state = Planner.plan(Policy(profiles: []), facts: RuntimeFacts(cgroupsAlongParent: ["vpn.slice": 1]))
        #expect(state.rules.isEmpty && state.routes.isEmpty && state.sysctls.isEmpty)
        #expect(state.nft.chains.isEmpty && state.nft.sets.isEmpty && state.nft.counters.isEmpty, "no profiles, no rules: nothing of ours in the way")
    }

    @Test func planTextListsEverything() {
        let facts = RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)])
        let text = PlanText.render(Planner.plan(policy, facts: facts), interfaceNames: [7: "wg0"])
        #expect(text.contains("table inet vpnexec {"))
        #expect(text.contains("\t\tsocket cgroupv2 level 5 vmap @cgroup_level_5"), "systemd's depths have their maps before any cgroup exists")
        #expect(text.contains("# ip -4 rule add priority 7300 fwmark 0x1000000/0x7f000000 table 7301 proto 118"))
        #expect(text.contains("# ip -6 route add default dev wg0 table 7301 metric 1 proto 118"))
        #expect(text.contains("# ip -4 route add unreachable default table 7301 metric 4294967295 proto 118"))
        #expect(text.contains("# net.ipv4.conf.all.src_valid_mark = 1"))
        #expect(text.contains("oifname \"wg0\" counter name \"work_tunnel\" accept"))
        #expect(text.contains("meta mark & 0x7f000000 == 0x01000000 oifname \"wg0\" fib saddr . oif type != local masquerade"))
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
        #expect(state.nft.set(named: "cgroup_level_5")?.elements == [
            NftElement(key: .cgroup(id: 555, path: "user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.mozilla.firefox-1.scope"),
                       verdict: .jump("member_work")),
        ])
        #expect(state.nft.set(named: "dns_level_5")?.elements.first?.verdict == .jump("dns_work"))
        let output = try #require(state.nft.chain(named: "route_output")).rules.map(\.statements)
        let five = try #require(output.firstIndex(of: [.cgroupVerdictMap(level: 5, map: "cgroup_level_5")]))
        let two = try #require(output.firstIndex(of: [.cgroupVerdictMap(level: 2, map: "cgroup_level_2")]))
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
        #expect(nested.1.contains("cgroup_level_6") && nested.0 != before.0, "another depth gets a map and a rule of its own")
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
        #expect(ExecutableRules.decide(executables: ["/usr/lib/firefox-esr/firefox-esr", "/usr/bin/firefox-esr"], cgroup: shell, policy: policy, parent: "vpn.slice")
                == .join(profile: "work"))
        #expect(ExecutableRules.decide(executables: ["/usr/lib/firefox-esr/firefox-esr"], cgroup: shell, policy: policy, parent: "vpn.slice") == nil)
        #expect(ExecutableRules.decide(executables: ["/usr/bin/steam", "/usr/bin/firefox-esr"], cgroup: "vpn.slice/vpn-work.slice", policy: policy, parent: "vpn.slice") == nil,
                "routed and already in its profile: the route rule decides")
        #expect(ExecutableRules.decide(executables: ["/usr/games/steam", "/usr/bin/steam"], cgroup: "vpn.slice/vpn-work.slice", policy: policy, parent: "vpn.slice")
                == .bypass(from: "work"))
        #expect(ExecutableRules.lateAnswer(executables: ["/usr/bin/firefox-esr"], policy: policy) == .refuse)
        #expect(ExecutableRules.lateAnswer(executables: ["/usr/bin/steam"], policy: policy) == .allow)
        #expect(ExecutableRules.lateAnswer(executables: [], policy: policy) == .allow)
    }
}
