import Addresses
import DNS
import DomainNames
import Plan
import Policy
import Routing
import SocketPrograms
import Testing

/// Members' DNS is routed to their proxy: a rule per profile, family and transport for its
/// mark, UDP or TCP and port 53, before the local table's rule (moved from 0 to 3), into a table whose
/// one route a family is local, from the profile's steering address (an IPv6 one kept on
/// `lo`). The proxy's own queries carry a bit the rules compare, so they go on into the
/// tunnel.
@Suite struct DNSRoutingTests {
    static let mask: UInt32 = 0x7f00_0000, proxyBit: UInt32 = 0x8000_0000

    static func query(_ priority: UInt32, mark: UInt32, mask: UInt32, port: UInt16 = 53, table: UInt32 = 0,
                      _ action: RoutingRule.Action = .lookup, ipv4: Bool = true, tcp: Bool = false) -> RoutingRule {
        RoutingRule(ipv4: ipv4, priority: priority, mark: mark, mask: mask, table: table, protocolNumber: 118, action: action,
                    inputInterface: "lo", ipProtocol: tcp ? 6 : 17, destinationPorts: port...port)
    }

    /// A profile's queries of both transports to its DNS table.
    static func queries(_ priority: UInt32, mark: UInt32, mask: UInt32, table: UInt32, ipv4: Bool = true) -> [RoutingRule] {
        [false, true].map { query(priority, mark: mark, mask: mask, table: table, ipv4: ipv4, tcp: $0) }
    }

    static func skip(ipv4: Bool) -> RoutingRule {
        RoutingRule(ipv4: ipv4, priority: 1, mark: 0, mask: mask, table: 0, protocolNumber: 118, action: .goto(priority: 3))
    }
    static func local(ipv4: Bool) -> RoutingRule { RoutingRule(ipv4: ipv4, priority: 3, mark: 0, mask: 0, table: 255, protocolNumber: 118) }

    @Test func eachProfilesQueriesGoToItsOwnTableBeforeTheLocalOne() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try! DomainPattern("bank.example")]
        let home = profile("home", tunnel: "tun0", index: 2)
        var open = profile("open", tunnel: "tun1", index: 3)
        open.bypassDomains = [try! DomainPattern("shop.example")]
        open.allowEncryptedDNS = true
        let policy = Policy(profiles: [work, home, open])
        var facts = RuntimeFacts()
        facts.links["lo"] = Link(index: 1, name: "lo", isUp: true, isRunning: true, mtu: 65536)
        let state = Planner.plan(policy, facts: facts)
        let both = Self.mask | Self.proxyBit
        var expected: [RoutingRule] = []
        for ipv4 in [true, false] {
            expected += [Self.skip(ipv4: ipv4), Self.local(ipv4: ipv4)]
            expected += Self.queries(2, mark: 0x0100_0000, mask: both, table: 7301 + 131072, ipv4: ipv4)
            // Where domain rules apply, DNS over QUIC fails at once (EACCES), none leaves.
            expected.append(Self.query(2, mark: 0x0100_0000, mask: both, port: 853, .prohibit, ipv4: ipv4))
            expected += Self.queries(2, mark: 0x0200_0000, mask: both, table: 7302 + 131072, ipv4: ipv4)
            expected += Self.queries(2, mark: 0x0300_0000, mask: both, table: 7303 + 131072, ipv4: ipv4)
        }
        #expect(state.rules.filter { $0.priority <= 3 } == expected)
        #expect(policy.routing.proxyMark == Self.proxyBit && policy.routing.proxyMark & policy.routing.markMask == 0)
        #expect(state.routes.filter { $0.table > 131072 } == (1...3).flatMap { index in
            [true, false].map { ipv4 in
                Route(destination: .defaultRoute(ipv4: ipv4), table: 7300 + index + 131072,
                      kind: .local(index: 1, source: DNSSteering.address(of: index, ipv6: !ipv4)), metric: 1, protocolNumber: 118)
            }
        })
        #expect(DNSSteering.address(of: 2) == IPAddress("127.77.0.2"))
        #expect(DNSSteering.address(of: 2, ipv6: true) == IPAddress("fd7f:4d::2"))
        // An IPv6 route's source must be one of the host's addresses: each on `lo`.
        #expect(state.addresses == ["fd7f:4d::1/128", "fd7f:4d::2/128", "fd7f:4d::3/128"].map {
            InterfaceAddress(interfaceIndex: 1, prefix: IPPrefix($0)!)
        })
        let text = PlanText.render(state, interfaceNames: [1: "lo"])
        #expect(text.contains("# ip addr add fd7f:4d::2/128 dev lo\n"), "vpnctl plan shows them")
        #expect(text.contains("# ip -6 route add local default dev lo src fd7f:4d::2 table 138374 metric 1 proto 118\n"))
    }

    /// System mode: sockets with no mark at all (everything not in a profile) go to the
    /// system profile's proxy too, first of all, and its members by their mark.
    @Test func systemModeTakesTheUnmarkedQueries() {
        let policy = Policy(profiles: [profile("all", tunnel: "wg0", index: 1)], system: SystemSettings(profile: "all"))
        let rules = Planner.plan(policy, facts: RuntimeFacts()).rules.filter { $0.priority <= 3 }
        #expect(rules.filter { $0.priority == 0 } == [true, false].flatMap { Self.queries(0, mark: 0, mask: .max, table: 7301 + 131072, ipv4: $0) })
        #expect(rules.contains(Self.query(2, mark: 0x0100_0000, mask: Self.mask | Self.proxyBit, table: 7301 + 131072, tcp: true)))
    }

    /// A profile that steps aside on a trusted network leaves its members' DNS to the host;
    /// with no profile served, the local table's rule stays where the kernel put it.
    @Test func aProfileSteppedAsideHasNoRule() {
        let policy = Policy(profiles: [profile("work", tunnel: "wg0", index: 1)])
        var facts = RuntimeFacts()
        facts.trusted = ["work": TrustedVerdict(action: .disconnect)]
        let state = Planner.plan(policy, facts: facts)
        #expect(state.rules.filter { $0.priority <= 3 }.isEmpty)
        #expect(state.routes.filter { $0.table > 131072 }.isEmpty)
        #expect(state.addresses.isEmpty, "no steering address on lo")
        #expect(Planner.plan(Policy(profiles: []), facts: RuntimeFacts()).rules.isEmpty)
    }

    /// IPv6 off (`disable_ipv6`, as guides against IPv6 leaks advise): the kernel refuses an
    /// IPv6 address on `lo`, a route through it and one through a tunnel where it is off.
    /// None is planned: a member's IPv6 query is refused at once (no steering address to
    /// answer from, and none may pass the proxy), and the profile's IPv6 is held by its
    /// unreachable route, as while the tunnel is down. IPv4 is as before.
    @Test func ipv6OffPlansNothingTheKernelRefuses() throws {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.routeDomains = [try DomainPattern("*.corp.example")]
        work.routeNetworks = [IPPrefix("10.20.0.0/16")!, IPPrefix("fd20::/48")!]
        let policy = Policy(profiles: [work])
        var facts = RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420, ipv6: false)])
        facts.loopbackIPv6 = false
        let off = Planner.plan(policy, facts: facts)
        #expect(off.addresses.isEmpty)
        #expect(off.routes.filter { $0.table > 131072 } == [
            Route(destination: .defaultRoute(ipv4: true), table: 7301 + 131072, kind: .local(index: 1, source: DNSSteering.address(of: 1)), metric: 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: false), table: 7301 + 131072, kind: .unreachable, metric: 2, protocolNumber: 118),
        ])
        #expect(!off.routes.contains { !$0.destination.isIPv4 && $0.kind == .device(index: 7) }, "no IPv6 route through wg0")
        #expect(off.routes.contains(Route(destination: .defaultRoute(ipv4: false), table: 7301, kind: .unreachable, metric: .max, protocolNumber: 118)))
        #expect(off.learnedRoutes.map(\.kind) == [.tunnel(device: 7, holds: true), .tunnel(device: nil, holds: true)], "route.domains' IPv6 answers: held")
        // IPv4 keeps everything, and so does IPv6 where it is on.
        #expect(off.routes.filter(\.destination.isIPv4) == Planner.plan(policy, facts: RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)])).routes.filter(\.destination.isIPv4))
        let on = Planner.plan(policy, facts: RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)]))
        #expect(on.addresses.count == 1 && on.routes.contains { !$0.destination.isIPv4 && $0.kind == .device(index: 7) })
        #expect(off.rules == on.rules, "rules do not depend on it (the kernel takes IPv6 rules with IPv6 off)")
    }
}
