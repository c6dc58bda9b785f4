import Addresses
import Policy
import Routing

/// allow_lan in the profile's table. A member's socket is born with its profile's mark
/// (BirthMarks), so its route and source address come from the profile's table when it
/// connects. The LAN ranges are thrown out of that table (`throw`: the lookup goes on with
/// the next rule, the main table), so a member's connection to the LAN gets the LAN's route
/// and the physical address as its source, also while the tunnel is down, as it did before
/// sockets were born marked; nftables still decides it goes direct (ExceptionRules gives it
/// the bypass mark). The networks that stay in the tunnel though they are private (the
/// tunnel's own, route.networks) get routes of their own, more specific than the LAN's and
/// into the tunnel, or unreachable while it is down: nftables would not re-route such a
/// packet, whose mark it leaves as it was born.
enum LANRoutes {
    /// Below the tunnel route (1) for the same prefix: what stays tunneled while it is down.
    static let tunnelDestinationLastResortMetric: UInt32 = 2
    static let lanMetric: UInt32 = .max - 1

    static func routes(_ profiles: [Profile], facts: RuntimeFacts) -> [Route] {
        profiles.filter { $0.allowLAN && facts.trustedAction($0) != .disconnect }.flatMap { profile -> [Route] in
            var routes: [Route] = []
            // Blocked (trusted networks): held as with the tunnel down and the killswitch on.
            let blocked = facts.trustedAction(profile) == .block
            let link = blocked ? nil : facts.links[profile.tunnel.interfaceName]
            for ipv4 in [true, false] {
                for prefix in ExceptionRules.tunnelDestinations(profile, facts: facts, ipv4: ipv4) where prefix.length > 0 {
                    if let link, link.isUp {
                        routes.append(route(prefix, profile, .device(index: link.index), RoutingPlan.tunnelMetric))
                    }
                    if profile.killswitch || blocked {
                        routes.append(route(prefix, profile, .unreachable, tunnelDestinationLastResortMetric))
                    }
                }
                var ranges = ipv4 ? ExceptionRules.lan4 : ExceptionRules.lan6
                if profile.allowMulticast { ranges += ipv4 ? ExceptionRules.multicast4 : ExceptionRules.multicast6 }
                routes += ranges.compactMap(IPPrefix.init).map { route($0, profile, .fallThrough, lanMetric) }
            }
            return routes
        }
    }

    private static func route(_ prefix: IPPrefix, _ profile: Profile, _ kind: Route.Kind, _ metric: UInt32) -> Route {
        Route(destination: prefix, table: profile.table, kind: kind, metric: metric, protocolNumber: vpnexecRouteProtocol)
    }
}
