import Nftables
import Policy
import Routing

/// What the killswitch holds by route, counted. A member's connect or send to an
/// unreachable route fails in the route lookup, before a packet exists: no netfilter hook
/// or cgroup program sees it, so the killswitch's counters stayed at 0 while it held
/// everything. With the hold device, a profile's table has one more default route while
/// the tunnel is not there, through a TUN of vpnd's that no one reads: what a member sends
/// then exists as a packet, and the `held` chain counts it in the profile's dropped counter
/// and rejects it (a TCP connect gets "No route to host", as at the unreachable route; a
/// datagram's send gets EPERM).
///
/// Fail-closed whatever goes: the device delivers nothing anywhere (a TUN without a reader
/// drops what it is given), so a deleted nft table changes no path; a deleted device takes
/// its routes with it, and the unreachable default behind them holds as before; vpnd gone
/// leaves both in place. Only a TUN is taken as the device: an interface of another kind
/// under that name is not routed into.
public enum HoldDevice {
    public static let name = "vpnexec-hold"
    /// Between the tunnel's route and the unreachable one.
    static let metric = RoutingPlan.lastResortMetric - 1
    static let chain = "held"

    /// Whether vpnd keeps the device: while a profile's killswitch or trusted network can
    /// hold (whether it holds now follows the tunnel, the device should not).
    public static func wanted(_ policy: Policy, facts: RuntimeFacts) -> Bool {
        policy.profiles.contains { $0.killswitch || RoutingPlan.holds($0, trusted: facts) }
    }

    /// The device, as the facts have it: a TUN by our name, up.
    static func link(_ links: [String: Link]) -> Link? {
        guard let link = links[name], link.kind == "tun", link.isUp else { return nil }
        return link
    }

    /// The hold route of a profile's table for a family, where the device can carry it.
    static func route(_ profile: Profile, links: [String: Link], ipv4: Bool) -> Route? {
        guard let device = link(links), ipv4 || device.ipv6 else { return nil }
        return Route(destination: .defaultRoute(ipv4: ipv4), table: profile.table, kind: .device(index: device.index),
                     metric: metric, protocolNumber: vpnexecRouteProtocol)
    }

    /// The output chain that counts and rejects what reaches the device: each holding
    /// profile's packets in its dropped counter, anything else (a mark no profile holds)
    /// in the stale marks' counter. Every packet the host sends passes an output chain, so
    /// it is there only while some profile's table routes a family into the device (its
    /// tunnel down, missing, blocked, or without IPv6). Until the pass that follows a tunnel
    /// going down adds it, the device drops what it is given, uncounted.
    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        let holding = policy.profiles.filter { RoutingPlan.holds($0, trusted: facts) }
        let heldNow = holding.contains { profile in
            [true, false].contains { RoutingPlan.tunnelLink(profile, links: facts.links, trusted: facts, ipv4: $0) == nil }
        }
        guard heldNow, link(facts.links) != nil else { return }
        // One compare for every packet but the held ones.
        var rules = [NftRule([.outputInterfaceName(name, negated: true), .verdict(.accept)])]
        rules += holding.map { profile in
            NftRule([.markMatch(mask: policy.routing.markMask, value: profile.mark.value, negated: false),
                     .namedCounter(ProfileObjectNames(profile.name).droppedCounter), .rejectNoRoute],
                    comment: "profile \(profile.name): held while its tunnel is not there")
        }
        rules.append(NftRule([.namedCounter(KillswitchRules.staleCounter), .rejectNoRoute]))
        table.chains.append(NftChain(name: chain, base: NftBaseChain(kind: .filter, hook: .output, priority: NftBaseChain.filter), rules: rules))
    }
}
