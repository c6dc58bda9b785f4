import Addresses
import Nftables
import Policy

/// Holes in a profile, by destination, declared by the admin:
/// - allow_lan: a member's connection to a private (RFC 1918, ULA) or link-local address,
///   and with allow_multicast to a multicast or broadcast one, goes direct. The ranges are
///   fixed, never "whatever subnet the current network claims" (TunnelCrack's LocalNet).
/// - bypass.domains: a member's connection to an address the profile's DNS proxy learned
///   for such a name goes direct, as the LAN does (DNS itself never does: it goes to the
///   proxy at the socket).
/// - route.networks and route.domains: anyone's connection to these networks, or to an
///   address learned for such a name, is the profile's (members of other profiles
///   excepted: they stay in their own).
///
/// Routing decides where each goes (DestinationRoutes, LearnedRoutes), when the socket
/// connects: a direct connection gets the physical address as its source, a tunneled one
/// the tunnel's, and nothing re-routes or NATs it. The sets here are what the killswitch
/// (KillswitchRules) and the guard on new connections to members (InboundRules) let pass
/// outside the tunnel, and what the DNS proxies fill.
///
/// Where two rules claim one destination, the tunnel wins for members: the tunnel's own
/// networks and the profile's route.networks stay in the tunnel even where they are
/// private or a bypassed name resolves into them, and an address the profile's proxy
/// answered for a name that is not bypassed stays in the tunnel while that answer lives,
/// even when a bypassed name shares it (a CDN or a shared host serves many names from one
/// address, and the packet carries only the address). For non-members only the route
/// lists count (bypass lists are members' holes), so there the route wins.
enum ExceptionRules {
    static let lan4 = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]
    static let lan6 = ["fc00::/7", "fe80::/10"]
    static let multicast4 = ["224.0.0.0/4", "255.255.255.255/32"]
    static let multicast6 = ["ff00::/8"]

    /// Whether some members' connections go direct by their destination.
    static func goesDirect(_ profile: Profile) -> Bool { profile.allowLAN || !profile.bypassDomains.isEmpty }

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            if goesDirect(profile) {
                table.counters.append(NftCounter(name: names.directCounter, comment: "profile \(profile.name): member packets sent direct (allow_lan, bypass.domains)"))
                for ipv4 in [true, false] {
                    let stay = tunnelDestinations(profile, facts: facts, ipv4: ipv4)
                    guard !stay.isEmpty else { continue }
                    table.sets.append(NftSet(name: names.tunnelDestinations(ipv4: ipv4), key: .address(ipv4: ipv4), elements: stay.map { NftElement(key: .prefix($0)) },
                                             comment: "profile \(profile.name): the tunnel's networks and route.networks, tunneled though private or bypassed", interval: true))
                }
            }
            for ipv4 in [true, false] where !profile.bypassDomains.isEmpty {
                table.sets += [
                    NftSet(name: names.bypassDomainSet(ipv4: ipv4), key: .address(ipv4: ipv4), comment: "profile \(profile.name): addresses of bypass.domains, from DNS answers", timeout: true),
                    NftSet(name: names.tunneledDomainSet(ipv4: ipv4), key: .address(ipv4: ipv4), comment: "profile \(profile.name): addresses of names not bypassed, from DNS answers", timeout: true),
                ]
            }
            for ipv4 in [true, false] where !profile.routeDomains.isEmpty {
                table.sets.append(NftSet(name: names.routeDomainSet(ipv4: ipv4), key: .address(ipv4: ipv4),
                                         comment: "profile \(profile.name): addresses of route.domains, from DNS answers", timeout: true))
            }
        }
        if policy.profiles.contains(where: \.allowLAN) {
            table.sets += [rangeSet("lan4", lan4, comment: "private (RFC 1918) and link-local"), rangeSet("lan6", lan6, comment: "unique local and link-local")]
        }
        if policy.profiles.contains(where: { $0.allowLAN && $0.allowMulticast }) {
            table.sets += [rangeSet("multicast4", multicast4, comment: "multicast and broadcast"), rangeSet("multicast6", multicast6, comment: "multicast")]
        }
    }

    /// Private networks that stay in the tunnel: the tunnel's own and route.networks.
    static func tunnelDestinations(_ profile: Profile, facts: RuntimeFacts, ipv4: Bool) -> [IPPrefix] {
        IPPrefix.covering((profile.routeNetworks + (facts.tunnelNetworks[profile.tunnel.interfaceName] ?? [])).filter { $0.isIPv4 == ipv4 })
    }

    /// The holes as `daddr` (leaving, KillswitchRules) or `saddr` (arriving, InboundRules)
    /// matches, ahead of `then`: the tunnel's destinations never (they are held, whatever
    /// else claims them), then the LAN ranges with allow_lan (and multicast), then what the
    /// proxy learned for bypass.domains.
    static func holes(_ profile: Profile, facts: RuntimeFacts, leaving: Bool, then verdict: [NftStatement], held: [NftStatement]) -> [NftRule] {
        guard goesDirect(profile) else { return [] }
        let names = ProfileObjectNames(profile.name)
        func match(_ ipv4: Bool, _ set: String) -> NftStatement {
            leaving ? .destinationInSet(ipv4: ipv4, set: set, negated: false) : .sourceInSet(ipv4: ipv4, set: set, negated: false)
        }
        var rules: [NftRule] = []
        for ipv4 in [true, false] where !tunnelDestinations(profile, facts: facts, ipv4: ipv4).isEmpty {
            rules.append(NftRule([match(ipv4, names.tunnelDestinations(ipv4: ipv4))] + held))
        }
        for ipv4 in [true, false] where profile.allowLAN {
            rules.append(NftRule([match(ipv4, ipv4 ? "lan4" : "lan6")] + verdict, comment: ipv4 ? "profile \(profile.name): allow_lan" : nil))
        }
        for ipv4 in [true, false] where profile.allowLAN && profile.allowMulticast && leaving {
            rules.append(NftRule([match(ipv4, ipv4 ? "multicast4" : "multicast6")] + verdict))
        }
        for ipv4 in [true, false] where !profile.bypassDomains.isEmpty {
            rules.append(NftRule([match(ipv4, names.bypassDomainSet(ipv4: ipv4))] + verdict, comment: ipv4 ? "profile \(profile.name): bypass.domains" : nil))
        }
        return rules
    }

    private static func rangeSet(_ name: String, _ prefixes: [String], comment: String) -> NftSet {
        NftSet(name: name, key: .address(ipv4: !name.hasSuffix("6")), elements: prefixes.map { NftElement(key: .prefix(IPPrefix($0)!)) },
               comment: comment, interval: true)
    }
}
