import Addresses
import Policy
import Routing

/// Routes by destination in a profile's table, beside its default (RoutingPlan):
/// - allow_lan: the LAN ranges are thrown out of the table (`throw`: the lookup goes on
///   with the next rule, the main table), so a member's connection to the LAN gets the
///   LAN's route and the physical address as its source, also while the tunnel is down;
/// - the networks that stay in the tunnel though they are private (route.networks, the
///   tunnel's own networks) get routes of their own into the tunnel, more specific than
///   the LAN's, or unreachable while it is down;
/// - route.networks, for non-members, in the profile's route-list table (RoutingPlan): into
///   the tunnel, or unreachable while it is down with the killswitch.
enum DestinationRoutes {
    /// Below the tunnel route (1) for the same prefix: what stays tunneled while it is down.
    static let tunnelDestinationLastResortMetric: UInt32 = 2
    static let lanMetric: UInt32 = .max - 1

    static func routes(_ profiles: [Profile], facts: RuntimeFacts) -> [Route] {
        profiles.filter { facts.trustedAction($0) != .disconnect }.flatMap { profile -> [Route] in
            var routes: [Route] = []
            for ipv4 in [true, false] {
                let link = RoutingPlan.tunnelLink(profile, links: facts.links, trusted: facts, ipv4: ipv4)
                for prefix in ExceptionRules.tunnelDestinations(profile, facts: facts, ipv4: ipv4) where prefix.length > 0 {
                    if let link {
                        routes.append(route(prefix, profile.table, .device(index: link.index), RoutingPlan.tunnelMetric))
                    }
                    if RoutingPlan.holds(profile, trusted: facts) {
                        routes.append(route(prefix, profile.table, .unreachable, tunnelDestinationLastResortMetric))
                    }
                }
                for prefix in profile.routeNetworks where prefix.isIPv4 == ipv4 && prefix.length > 0 {
                    let table = RoutingPlan.routeListTable(profile)
                    if let link { routes.append(route(prefix, table, .device(index: link.index), RoutingPlan.tunnelMetric)) }
                    if RoutingPlan.holds(profile, trusted: facts) { routes.append(route(prefix, table, .unreachable, tunnelDestinationLastResortMetric)) }
                }
                guard profile.allowLAN else { continue }
                var ranges = ipv4 ? ExceptionRules.lan4 : ExceptionRules.lan6
                if profile.allowMulticast { ranges += ipv4 ? ExceptionRules.multicast4 : ExceptionRules.multicast6 }
                routes += ranges.compactMap(IPPrefix.init).map { route($0, profile.table, .fallThrough, lanMetric) }
            }
            return routes
        }
    }

    private static func route(_ prefix: IPPrefix, _ table: UInt32, _ kind: Route.Kind, _ metric: UInt32) -> Route {
        Route(destination: prefix, table: table, kind: kind, metric: metric, protocolNumber: vpnexecRouteProtocol)
    }
}
