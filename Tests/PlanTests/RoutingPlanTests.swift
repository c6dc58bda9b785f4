import Addresses
import DNS
import DomainNames
import Plan
import Policy
import Routing
import Testing

/// What is not a member reaches a tunnel by rules, never by a re-route: the route lists
/// look up the profile's table without its default route; what the proxies learn becomes
/// routes in the profile's table.
@Suite struct RoutingPlanTests {
    let up = ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)]

    @Test func routeListsHaveATableOfTheirOwn() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.routeNetworks = [IPPrefix("10.20.0.0/16")!]
        var home = profile("home", tunnel: "tun0", index: 2)
        home.routeDomains = [try! DomainPattern("*.corp.example")]
        let state = Planner.plan(Policy(profiles: [work, home, profile("other", tunnel: "tun1", index: 3)]), facts: RuntimeFacts(links: up))
        #expect(state.rules.filter { $0.ipv4 && $0.priority > 7301 } == [
            RoutingRule(ipv4: true, priority: 7303, mark: 0, mask: .max, table: 7301 + 65536, protocolNumber: 118, inputInterface: "lo"),
            RoutingRule(ipv4: true, priority: 7303, mark: 0, mask: .max, table: 7302 + 65536, protocolNumber: 118, inputInterface: "lo"),
            RoutingRule(ipv4: true, priority: 7305, mark: 0, mask: 0, table: 0, protocolNumber: 118, action: .nop),
        ], "sockets with no mark at all, made here; other profiles' members keep their own table")
        // route.networks are routes of that table, held with the killswitch while the tunnel
        // is down; it has no default, so anything else goes on to the main table even then.
        #expect(state.routes.filter { $0.table == 7301 + 65536 } == [
            Route(destination: IPPrefix("10.20.0.0/16")!, table: 7301 + 65536, kind: .device(index: 7), metric: 1, protocolNumber: 118),
            Route(destination: IPPrefix("10.20.0.0/16")!, table: 7301 + 65536, kind: .unreachable, metric: 2, protocolNumber: 118),
        ])
        let down = Planner.plan(Policy(profiles: [work]), facts: RuntimeFacts())
        #expect(down.routes.filter { $0.table == 7301 + 65536 }.map(\.kind) == [.unreachable], "tunnel down: only its destinations are held")
    }

    /// While the tunnel is not there, a holding profile's table routes into the hold device
    /// before its unreachable default, and the output chain counts each profile's packets
    /// there in its dropped counter: what the route holds is counted. Without the device (or
    /// with another kind of interface under its name) only the unreachable route holds; with
    /// the tunnel up, its route comes first; a profile without the killswitch is not held.
    @Test func whatTheRouteHoldsGoesToTheCountedHoldDevice() throws {
        var hold = Link(index: 9, name: HoldDevice.name, isUp: true, isRunning: false, mtu: 1500)
        hold.kind = "tun"
        let policy = Policy(profiles: [profile("work", tunnel: "wg0", index: 1), profile("open", tunnel: "wg1", index: 2, killswitch: false)])
        let held = Planner.plan(policy, facts: RuntimeFacts(links: [HoldDevice.name: hold]))
        #expect(held.holdDevice)
        let table = policy.profiles[0].table
        #expect(held.routes.filter { $0.table == table && $0.destination == .defaultRoute(ipv4: true) } == [
            Route(destination: .defaultRoute(ipv4: true), table: table, kind: .device(index: 9), metric: .max - 1, protocolNumber: 118),
            Route(destination: .defaultRoute(ipv4: true), table: table, kind: .unreachable, metric: .max, protocolNumber: 118),
        ])
        #expect(held.routes.filter { $0.table == table && $0.destination == .defaultRoute(ipv4: false) }.map(\.kind) == [.device(index: 9), .unreachable])
        #expect(held.routes.filter { $0.table == policy.profiles[1].table }.isEmpty, "without the killswitch nothing is held")
        let chain = try #require(held.nft.chains.first { $0.name == "held" })
        #expect(chain.base?.hook == .output)
        #expect(chain.rules.map(\.statements) == [
            [.outputInterfaceName(HoldDevice.name, negated: true), .verdict(.accept)],
            [.markMatch(mask: policy.routing.markMask, value: policy.profiles[0].mark.value, negated: false), .namedCounter("work_dropped"), .rejectNoRoute],
            [.namedCounter("stale_marks"), .rejectNoRoute],
        ])
        #expect(held.nft.counters.contains { $0.name == "work_dropped" })

        var wgUp = up
        wgUp[HoldDevice.name] = hold
        let running = Planner.plan(policy, facts: RuntimeFacts(links: wgUp))
        #expect(running.routes.filter { $0.table == table && $0.destination == .defaultRoute(ipv4: true) }.map(\.kind) == [.device(index: 7), .device(index: 9), .unreachable],
                "the tunnel's route first (metric 1)")
        #expect(!running.nft.chains.contains { $0.name == "held" }, "nothing held now: no chain for every packet to pass")
        var noIPv6 = wgUp
        noIPv6["wg0"]!.ipv6 = false
        #expect(Planner.plan(policy, facts: RuntimeFacts(links: noIPv6)).nft.chains.contains { $0.name == "held" }, "its IPv6 is held: counted")

        let none = Planner.plan(policy, facts: RuntimeFacts())
        #expect(none.holdDevice, "wanted before it exists: the apply makes it")
        #expect(none.routes.filter { $0.table == table }.map(\.kind) == [.unreachable, .unreachable])
        #expect(!none.nft.chains.contains { $0.name == "held" })
        var veth = hold
        veth.kind = "veth"
        let foreign = Planner.plan(policy, facts: RuntimeFacts(links: [HoldDevice.name: veth]))
        #expect(foreign.routes.filter { $0.table == table }.map(\.kind) == [.unreachable, .unreachable], "not a TUN: not ours, not routed into")

        let open = Planner.plan(Policy(profiles: [policy.profiles[1]]), facts: RuntimeFacts(links: [HoldDevice.name: hold]))
        #expect(!open.holdDevice, "no profile can hold: no device")
    }

    /// A route lookup without our marks (each datagram a tunnel daemon sends) passes our
    /// rules one by one, or skips them by a goto: past the profiles' rules to a nop (two
    /// visits: only over three rules or more), past the members' DNS rules to the local
    /// table's, which it meets anyway (one visit: over two or more, which one profile has,
    /// for UDP and TCP).
    @Test func unmarkedLookupsSkipOurRulesWhereThatVisitsFewer() {
        func skips(_ count: UInt32) -> (profiles: Bool, dns: Bool) {
            let rules = Planner.plan(Policy(profiles: (1...count).map { profile("p\($0)", tunnel: "wg\($0)", index: $0) }),
                                     facts: RuntimeFacts(links: up)).rules.filter(\.ipv4)
            return (rules.contains(RoutingRule(ipv4: true, priority: 7299, mark: 0, mask: 0x7f00_0000, table: 0, protocolNumber: 118,
                                               action: .goto(priority: 7301)))
                        && rules.contains(RoutingRule(ipv4: true, priority: 7301, mark: 0, mask: 0, table: 0, protocolNumber: 118, action: .nop)),
                    rules.contains(RoutingRule(ipv4: true, priority: 1, mark: 0, mask: 0x7f00_0000, table: 0, protocolNumber: 118,
                                               action: .goto(priority: 3))))
        }
        #expect(skips(1) == (false, true) && skips(2) == (false, true))
        #expect(skips(3) == (true, true) && skips(64) == (true, true))
        // One profile: an unmarked lookup meets the skip past its two DNS rules, the local
        // table, its table's rule, then the main table's.
        let one = Planner.plan(Policy(profiles: [profile("work", tunnel: "wg0", index: 1)]), facts: RuntimeFacts(links: up))
        #expect(one.rules.filter(\.ipv4).map(\.priority).sorted() == [1, 2, 2, 3, 7300])
    }

    @Test func learnedAddressesBecomeRoutes() {
        let tunnel = LearnedRoutes(set: "route_dns4_work", ipv4: true, table: 7301, kind: .tunnel(device: 7, holds: true))
        let address = IPAddress("198.51.100.7")!
        #expect(tunnel.routes(for: address, tunneled: false) == [
            Route(destination: IPPrefix("198.51.100.7/32")!, table: 7301, kind: .device(index: 7), metric: 3, protocolNumber: 119),
            Route(destination: IPPrefix("198.51.100.7/32")!, table: 7301, kind: .unreachable, metric: 4, protocolNumber: 119),
        ])
        let down = LearnedRoutes(set: "route_dns4_work", ipv4: true, table: 7301, kind: .tunnel(device: nil, holds: true))
        #expect(down.routes(for: address, tunneled: false).map(\.kind) == [.unreachable], "held while the tunnel is down")
        let open = LearnedRoutes(set: "route_dns4_work", ipv4: true, table: 7301, kind: .tunnel(device: nil, holds: false))
        #expect(open.routes(for: address, tunneled: false).isEmpty, "without the killswitch the address falls through to the main table")
        let v6 = LearnedRoutes(set: "bypass_dns6_work", ipv4: false, table: 7301, kind: .bypass(tunneledSet: "tunneled_dns6_work", tunnelDestinations: []))
        #expect(v6.routes(for: IPAddress("2001:db8::30")!, tunneled: false) == [
            Route(destination: IPPrefix("2001:db8::30/128")!, table: 7301, kind: .fallThrough, metric: 5, protocolNumber: 119),
        ])
    }
}
