import Policy
import Routing

/// mark -> route. One `ip rule` per profile and family sends its mark to the profile's
/// table; the table's default route leaves through the tunnel. With the killswitch on,
/// an unreachable default of last resort stays in the table, so that a tunnel that is
/// down or gone never lets a lookup fall through to the main table (nor can a route
/// pushed by DHCP pull marked traffic out: the profile's table is consulted first).
enum RoutingPlan {
    static let tunnelMetric: UInt32 = 1
    static let lastResortMetric: UInt32 = .max

    static func rules(_ profiles: [Profile], routing: RoutingSettings) -> [RoutingRule] {
        let lookups = profiles.flatMap { profile in
            [true, false].map { ipv4 in
                RoutingRule(ipv4: ipv4, priority: routing.rulePriority, mark: profile.mark.value,
                            mask: routing.markMask, table: profile.table, protocolNumber: vpnexecRouteProtocol)
            }
        }
        // Route lookups of packets that carry none of our marks (everything but members: a
        // tunnel's own encrypted datagrams, every packet received) skip the profiles' rules
        // in one step: the kernel tries rules one by one, and with 64 profiles the walk was
        // 1% of a tunnel's cycles (perf). The goto needs a rule at its target: a nop right
        // after ours. Not where the priorities around ours are the local or main table's.
        let priority = routing.rulePriority
        guard !profiles.isEmpty, priority > 1, priority < 32765 else { return lookups }
        return [true, false].flatMap { ipv4 in
            [RoutingRule(ipv4: ipv4, priority: priority + 1, mark: 0, mask: 0, table: 0, protocolNumber: vpnexecRouteProtocol, action: .nop),
             RoutingRule(ipv4: ipv4, priority: priority - 1, mark: 0, mask: routing.markMask, table: 0, protocolNumber: vpnexecRouteProtocol,
                         action: .goto(priority: priority + 1))]
        } + lookups
    }

    /// A trusted network's `disconnect` leaves the table empty (members' lookups go on to
    /// the main table: direct); `block` leaves only the unreachable route.
    static func routes(_ profiles: [Profile], links: [String: Link], trusted: RuntimeFacts = RuntimeFacts()) -> [Route] {
        profiles.flatMap { profile -> [Route] in
            var routes: [Route] = []
            let action = trusted.trustedAction(profile)
            guard action != .disconnect else { return [] }
            for ipv4 in [true, false] {
                // The kernel refuses a route through an interface that is down and removes
                // those it had: the tunnel route exists only while the tunnel is up.
                if action == .connect, let link = links[profile.tunnel.interfaceName], link.isUp {
                    routes.append(Route(destination: .defaultRoute(ipv4: ipv4), table: profile.table,
                                        kind: .device(index: link.index), metric: tunnelMetric, protocolNumber: vpnexecRouteProtocol))
                }
                if profile.killswitch || action == .block {
                    routes.append(Route(destination: .defaultRoute(ipv4: ipv4), table: profile.table,
                                        kind: .unreachable, metric: lastResortMetric, protocolNumber: vpnexecRouteProtocol))
                }
            }
            return routes
        }
    }
}
