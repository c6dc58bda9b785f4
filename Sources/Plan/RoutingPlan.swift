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
        profiles.flatMap { profile in
            [true, false].map { ipv4 in
                RoutingRule(ipv4: ipv4, priority: routing.rulePriority, mark: routing.mark(forIndex: profile.index),
                            mask: routing.markMask, table: profile.table, protocolNumber: vpnexecRouteProtocol)
            }
        }
    }

    static func routes(_ profiles: [Profile], links: [String: Link]) -> [Route] {
        profiles.flatMap { profile -> [Route] in
            var routes: [Route] = []
            for ipv4 in [true, false] {
                // The kernel refuses a route through an interface that is down and removes
                // those it had: the tunnel route exists only while the tunnel is up.
                if let link = links[profile.tunnel.interfaceName], link.isUp {
                    routes.append(Route(destination: .defaultRoute(ipv4: ipv4), table: profile.table,
                                        kind: .device(index: link.index), metric: tunnelMetric, protocolNumber: vpnexecRouteProtocol))
                }
                if profile.killswitch {
                    routes.append(Route(destination: .defaultRoute(ipv4: ipv4), table: profile.table,
                                        kind: .unreachable, metric: lastResortMetric, protocolNumber: vpnexecRouteProtocol))
                }
            }
            return routes
        }
    }
}
