import Addresses
import DNS
import Plan
import Policy
import Routing
import Testing

/// Members' IPv4 UDP DNS is routed to their proxy: a rule per profile for its mark, UDP and
/// port 53, before the local table's rule (moved from 0 to 3), into a table whose one
/// route is local, from the profile's steering address. The proxy's own queries carry a bit
/// the rules compare, so they go on into the tunnel.
@Suite struct DNSRoutingTests {
    static let mask: UInt32 = 0x7f00_0000, proxyBit: UInt32 = 0x8000_0000

    static func query(_ priority: UInt32, mark: UInt32, mask: UInt32, port: UInt16 = 53, table: UInt32 = 0,
                      _ action: RoutingRule.Action = .lookup) -> RoutingRule {
        RoutingRule(ipv4: true, priority: priority, mark: mark, mask: mask, table: table, protocolNumber: 118, action: action,
                    inputInterface: "lo", ipProtocol: 17, destinationPorts: port...port)
    }

    static let skip = RoutingRule(ipv4: true, priority: 1, mark: 0, mask: mask, table: 0, protocolNumber: 118, action: .goto(priority: 3))
    static let local = RoutingRule(ipv4: true, priority: 3, mark: 0, mask: 0, table: 255, protocolNumber: 118)

    @Test func eachProfilesQueriesGoToItsOwnTableBeforeTheLocalOne() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try! DomainPattern("bank.example")]
        let home = profile("home", tunnel: "tun0", index: 2)
        var open = profile("open", tunnel: "tun1", index: 3)
        open.bypassDomains = [try! DomainPattern("shop.example")]
        open.allowEncryptedDNS = true
        let policy = Policy(profiles: [work, home, open])
        let state = Planner.plan(policy, facts: RuntimeFacts())
        #expect(state.rules.filter { $0.priority <= 3 } == [
            Self.skip, Self.local,
            Self.query(2, mark: 0x0100_0000, mask: Self.mask | Self.proxyBit, table: 7301 + 131072),
            // Where domain rules apply, DNS over QUIC fails at once (EACCES), none leaves.
            Self.query(2, mark: 0x0100_0000, mask: Self.mask | Self.proxyBit, port: 853, .prohibit),
            Self.query(2, mark: 0x0200_0000, mask: Self.mask | Self.proxyBit, table: 7302 + 131072),
            Self.query(2, mark: 0x0300_0000, mask: Self.mask | Self.proxyBit, table: 7303 + 131072),
        ])
        #expect(policy.routing.proxyMark == Self.proxyBit && policy.routing.proxyMark & policy.routing.markMask == 0)
        #expect(state.routes.filter { $0.table > 131072 } == (1...3).map { index in
            Route(destination: .defaultRoute(ipv4: true), table: 7300 + index + 131072,
                  kind: .local(index: 1, source: DNSSteering.address(of: index)), metric: 0, protocolNumber: 118)
        })
        #expect(DNSSteering.address(of: 2) == IPAddress("127.77.0.2"))
    }

    /// System mode: sockets with no mark at all (everything not in a profile) go to the
    /// system profile's proxy too, first of all, and its members by their mark.
    @Test func systemModeTakesTheUnmarkedQueries() {
        let policy = Policy(profiles: [profile("all", tunnel: "wg0", index: 1)], system: SystemSettings(profile: "all"))
        let rules = Planner.plan(policy, facts: RuntimeFacts()).rules.filter { $0.priority <= 3 }
        #expect(rules.filter { $0.priority == 0 } == [Self.query(0, mark: 0, mask: .max, table: 7301 + 131072)])
        #expect(rules.contains(Self.query(2, mark: 0x0100_0000, mask: Self.mask | Self.proxyBit, table: 7301 + 131072)))
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
        #expect(Planner.plan(Policy(profiles: []), facts: RuntimeFacts()).rules.isEmpty)
    }
}
