import Addresses
import Policy
import Routing

/// The run-time set elements that become routes, and how. The DNS proxies add what they
/// learn to nft sets (with the answer's lifetime, acknowledged before the answer goes out);
/// where a set's addresses must change a route, the same addition puts a route into the
/// profile's table, so that a socket connecting to the address gets its route, and its
/// source address, from its first lookup:
/// - bypass.domains: the address is thrown out of the profile's table (members reach it by
///   the main table, from the physical address), unless the tunnel wins for it: it is one
///   of the tunnel's destinations (route.networks, the tunnel's networks), or the proxy
///   answered it for a name that is not bypassed while that answer lives (the tunneled set).
/// - route.domains: the address goes into the tunnel for non-members (the profile's
///   route-list table: RoutingPlan), held unreachable while the tunnel is down (killswitch),
///   as route.networks are (DestinationRoutes). Members go there through their own table.
/// The routes carry their own protocol (vpnexecLearnedRouteProtocol) and live exactly as
/// long as their element: the apply edge removes a route when its element's lifetime ends
/// and no socket uses the address any more.
public struct LearnedRoutes: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case bypass(tunneledSet: String, tunnelDestinations: [IPPrefix])
        case tunnel(device: Int32?, holds: Bool)
    }

    public var set: String
    public var ipv4: Bool
    public var table: UInt32
    public var kind: Kind
    /// The profile's mark under the mask: whose open connections keep a bypassed address.
    public var mark: UInt32
    public var mask: UInt32

    public init(set: String, ipv4: Bool, table: UInt32, kind: Kind, mark: UInt32 = 0, mask: UInt32 = 0) {
        self.set = set
        self.ipv4 = ipv4
        self.table = table
        self.kind = kind
        self.mark = mark
        self.mask = mask
    }

    /// Metrics after the planned routes for the same prefix (the tunnel's 1 and 2), so that
    /// of a bypassed and a route.domains address in one table the tunnel wins.
    static let tunnelMetric: UInt32 = 3, lastResortMetric: UInt32 = 4, throwMetric: UInt32 = 5

    /// The routes for `address` while it is an element of the set; `tunneled` says whether
    /// it is an element of the tunneled set now (bypass only).
    public func routes(for address: IPAddress, tunneled: Bool) -> [Route] {
        guard let destination = IPPrefix(address: address, length: address.bitCount) else { return [] }
        func route(_ kind: Route.Kind, _ metric: UInt32) -> Route {
            Route(destination: destination, table: table, kind: kind, metric: metric, protocolNumber: vpnexecLearnedRouteProtocol)
        }
        switch kind {
        case let .bypass(_, stay):
            guard !tunneled, !stay.contains(where: { $0.contains(address) }) else { return [] }
            return [route(.fallThrough, Self.throwMetric)]
        case let .tunnel(device, holds):
            return (device.map { [route(.device(index: $0), Self.tunnelMetric)] } ?? []) + (holds ? [route(.unreachable, Self.lastResortMetric)] : [])
        }
    }

    static func plan(_ policy: Policy, facts: RuntimeFacts) -> [LearnedRoutes] {
        policy.profiles.filter { facts.trustedAction($0) != .disconnect }.flatMap { profile -> [LearnedRoutes] in
            let names = ProfileObjectNames(profile.name)
            var learned: [LearnedRoutes] = []
            for ipv4 in [true, false] {
                if !profile.bypassDomains.isEmpty {
                    learned.append(LearnedRoutes(set: names.bypassDomainSet(ipv4: ipv4), ipv4: ipv4, table: profile.table,
                                                 kind: .bypass(tunneledSet: names.tunneledDomainSet(ipv4: ipv4),
                                                               tunnelDestinations: ExceptionRules.tunnelDestinations(profile, facts: facts, ipv4: ipv4)),
                                                 mark: profile.mark.value, mask: policy.routing.markMask))
                }
                if !profile.routeDomains.isEmpty {
                    let link = RoutingPlan.tunnelLink(profile, links: facts.links, trusted: facts, ipv4: ipv4)
                    learned.append(LearnedRoutes(set: names.routeDomainSet(ipv4: ipv4), ipv4: ipv4, table: RoutingPlan.routeListTable(profile),
                                                 kind: .tunnel(device: link?.index, holds: RoutingPlan.holds(profile, trusted: facts)),
                                                 mark: profile.mark.value, mask: policy.routing.markMask))
                }
            }
            return learned
        }
    }
}
