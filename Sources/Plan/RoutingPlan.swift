import Policy
import Routing

/// mark -> route. One `ip rule` per profile and family sends its mark to the profile's
/// table; the table's default route leaves through the tunnel. With the killswitch on,
/// an unreachable default of last resort stays in the table, so that a tunnel that is
/// down or gone never lets a lookup fall through to the main table (nor can a route
/// pushed by DHCP pull marked traffic out: the profile's table is consulted first).
///
/// Sockets are born marked (SocketProgramPlan), so these lookups happen when a socket
/// connects or sends, and choose its source address too. What is not a member reaches a
/// profile's tunnel through rules as well, never through a re-route: the route lists
/// (route.networks, route.domains) and system mode look up the profile's table for
/// unmarked sockets. The rules, by priority (P = `[routing] rule_priority`):
///
///     P-1  no mark of ours: goto P+1 (*)        P+3  route lists: the profile's route-list
///     P    a profile's mark: its table                 table (only their destinations)
///     P+1  nop (*)                              P+4  system mode: the system profile's table
///     P+2  a tunnel's own transport, DHCP:      P+5  nop
///          goto P+5 (the main table)
///
/// (*) With three profiles or more (`RoutingRule.skipPays`).
///
/// The route lists have a table of their own (`routeListTable`), with routes for their
/// destinations only: a lookup there that finds none goes on to the main table, where the
/// profile's own table would end it at its unreachable default (the killswitch; a rule's
/// suppress_prefixlength does not pass over an unreachable route).
///
/// Rules P+2 to P+5 exist only with route lists or system mode; they match sockets with
/// no mark at all (a mark of another tool's, wg-quick's 51820 or OpenVPN's `--mark`, is
/// privileged software routing itself) and locally made packets only (`iif lo`: a lookup
/// for a received or forwarded packet has its interface as iif).
enum RoutingPlan {
    static let tunnelMetric: UInt32 = 1
    static let lastResortMetric: UInt32 = .max

    /// Where the rules after the members' start, relative to `rule_priority`.
    enum Slot: UInt32 {
        case exclusion = 2, routeLists = 3, system = 4, end = 5
    }

    static func rules(_ policy: Policy, facts: RuntimeFacts) -> [RoutingRule] {
        let routing = policy.routing, priority = routing.rulePriority
        let lookups = policy.profiles.flatMap { profile in
            [true, false].map { ipv4 in
                RoutingRule(ipv4: ipv4, priority: priority, mark: profile.mark.value,
                            mask: routing.markMask, table: profile.table, protocolNumber: vpnexecRouteProtocol)
            }
        }
        // Route lookups of packets that carry none of our marks (everything but members: a
        // tunnel's own encrypted datagrams, every packet received) skip the profiles' rules
        // in one step: the kernel tries rules one by one, and with 64 profiles the walk was
        // 1% of a tunnel's cycles (perf). The goto needs a rule at its target: a nop right
        // after ours. Not where the priorities around ours are the local or main table's.
        guard !policy.profiles.isEmpty, priority > 1, priority + Slot.end.rawValue < 32766 else { return lookups }
        var rules = lookups
        if RoutingRule.skipPays(over: policy.profiles.count, landingOnNop: true) {
            rules = [true, false].flatMap { ipv4 in
                [RoutingRule(ipv4: ipv4, priority: priority + 1, mark: 0, mask: 0, table: 0, protocolNumber: vpnexecRouteProtocol, action: .nop),
                 RoutingRule(ipv4: ipv4, priority: priority - 1, mark: 0, mask: routing.markMask, table: 0, protocolNumber: vpnexecRouteProtocol,
                             action: .goto(priority: priority + 1))]
            } + lookups
        }
        let listed = policy.profiles.filter(routesNonMembers)
        let system = policy.systemProfile
        guard !listed.isEmpty || system != nil else { return rules }
        func unmarked(_ ipv4: Bool, _ slot: Slot, table: UInt32 = 0, action: RoutingRule.Action = .lookup, suppress: UInt32? = nil,
                      local: Bool = true, ipProtocol: UInt8? = nil, sourcePorts: ClosedRange<UInt16>? = nil,
                      destinationPorts: ClosedRange<UInt16>? = nil, uids: ClosedRange<UInt32>? = nil) -> RoutingRule {
            RoutingRule(ipv4: ipv4, priority: priority + slot.rawValue, mark: 0, mask: .max, table: table, protocolNumber: vpnexecRouteProtocol,
                        suppressPrefixLength: suppress, action: action, inputInterface: local ? "lo" : nil, ipProtocol: ipProtocol,
                        sourcePorts: sourcePorts, destinationPorts: destinationPorts, uidRange: uids)
        }
        let past = RoutingRule.Action.goto(priority: priority + Slot.end.rawValue)
        for ipv4 in [true, false] {
            for transport in TransportRules.direct(policy, facts: facts) {
                guard let port = transport.udpPort, port > 0, port < 65535 else { continue }
                rules.append(unmarked(ipv4, .exclusion, action: past, ipProtocol: 17, sourcePorts: port...port, uids: transport.owner.map { $0...$0 }))
            }
            if system != nil {
                for (client, server) in SystemRules.dhcpPorts where ipv4 == (client == 68) {
                    rules.append(unmarked(ipv4, .exclusion, action: past, ipProtocol: 17, sourcePorts: client...client, destinationPorts: server...server))
                }
            }
            rules += listed.map { unmarked(ipv4, .routeLists, table: routeListTable($0)) }
            if let system { rules.append(unmarked(ipv4, .system, table: system.table)) }
            rules.append(RoutingRule(ipv4: ipv4, priority: priority + Slot.end.rawValue, mark: 0, mask: 0, table: 0, protocolNumber: vpnexecRouteProtocol, action: .nop))
        }
        return rules
    }

    /// Whether non-members' connections to some destinations go into the profile's tunnel.
    static func routesNonMembers(_ profile: Profile) -> Bool {
        !profile.routeNetworks.isEmpty || !profile.routeDomains.isEmpty
    }

    /// The table of a profile's route lists (`Profile.routeListTable`; the parser keeps it
    /// clear of every profile's table and the kernel's).
    public static func routeListTable(_ profile: Profile) -> UInt32 { profile.routeListTable }

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
                if let link = tunnelLink(profile, links: links, trusted: trusted, ipv4: ipv4) {
                    routes.append(Route(destination: .defaultRoute(ipv4: ipv4), table: profile.table,
                                        kind: .device(index: link.index), metric: tunnelMetric, protocolNumber: vpnexecRouteProtocol))
                }
                if holds(profile, trusted: trusted) {
                    // Counted there (HoldDevice); the unreachable route holds where it is gone.
                    if let hold = HoldDevice.route(profile, links: links, ipv4: ipv4) { routes.append(hold) }
                    routes.append(Route(destination: .defaultRoute(ipv4: ipv4), table: profile.table,
                                        kind: .unreachable, metric: lastResortMetric, protocolNumber: vpnexecRouteProtocol))
                }
            }
            return routes
        }
    }

    /// The tunnel interface routes of a family may go through: up, and the profile
    /// connects; for IPv6, with IPv6 on (where it is off the kernel refuses the route, and
    /// the unreachable one holds the profile's IPv6 as a tunnel that is down would).
    static func tunnelLink(_ profile: Profile, links: [String: Link], trusted: RuntimeFacts, ipv4: Bool) -> Link? {
        guard trusted.trustedAction(profile) == .connect, let link = links[profile.tunnel.interfaceName], link.isUp, ipv4 || link.ipv6 else { return nil }
        return link
    }

    /// Whether what is routed into the tunnel is held (unreachable) while the tunnel is not
    /// there: the killswitch, or a trusted network's `block`.
    static func holds(_ profile: Profile, trusted: RuntimeFacts) -> Bool {
        let action = trusted.trustedAction(profile)
        return (profile.killswitch && action != .disconnect) || action == .block
    }
}

extension RoutingRule {
    /// Whether a goto past `count` rules costs a lookup fewer rule visits than trying
    /// them. A rule that does not match is left at its first differing field, as cheap as
    /// a goto taken; the goto is one visit, and where it lands on a nop of ours (not on a
    /// rule the lookup goes on to anyway) the nop is another. Every rule visited is paid by
    /// each datagram a tunnel daemon sends (an unconnected socket looks its route up for
    /// each: perf, bench/README).
    static func skipPays(over count: Int, landingOnNop: Bool) -> Bool { count > (landingOnNop ? 2 : 1) }
}
