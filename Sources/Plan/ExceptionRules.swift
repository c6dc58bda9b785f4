import Addresses
import Nftables
import Policy

/// Holes in a profile, by destination, declared by the admin:
/// - allow_lan: a member's packet to a private (RFC 1918, ULA) or link-local address, and
///   with allow_multicast to a multicast or broadcast one, goes direct. The ranges are
///   fixed, never "whatever subnet the current network claims" (TunnelCrack's LocalNet).
///   Such packets get the bypass mark (so no profile rule routes them and the killswitch
///   lets them pass), remembered by the connection.
/// - bypass.domains: a member's packet to an address the profile's DNS proxy learned for
///   such a name goes direct, as the LAN does (DNS itself never does).
/// - route.networks and route.domains: anyone's new connection to these networks, or to
///   an address learned for such a name, is the profile's (members of other profiles
///   excepted: they stay in their own).
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

    /// Whether some members' packets go direct by their destination.
    static func goesDirect(_ profile: Profile) -> Bool { profile.allowLAN || !profile.bypassDomains.isEmpty }

    /// Whether destinations decide (so a classifier chain runs for new packets): some go
    /// direct, or encrypted DNS is refused.
    static func classifies(_ profile: Profile, in policy: Policy) -> Bool {
        goesDirect(profile) || EncryptedDNSRules.refuses(profile, in: policy)
    }

    /// The chain a member's packet enters: the classifier when destinations decide, else
    /// straight to the member chain.
    static func entryChain(_ profile: Profile, in policy: Policy) -> String {
        let names = ProfileObjectNames(profile.name)
        return classifies(profile, in: policy) ? names.classifyChain : names.memberChain
    }

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        let mask = policy.routing.markMask
        let bypass = policy.routing.bypassMark
        var multicastUsed = false
        table.counters += EncryptedDNSRules.counters(policy)
        for profile in policy.profiles where classifies(profile, in: policy) {
            let names = ProfileObjectNames(profile.name)
            var classify = EncryptedDNSRules.rules(profile, in: policy)
            guard goesDirect(profile) else {
                table.chains.append(NftChain(name: names.classifyChain, rules: classify + [NftRule([.verdict(.goto(names.memberChain))])]))
                continue
            }
            // DNS is never direct: the profile's proxy answers it (DNSRules).
            classify += [NftTransport.udp, .tcp].map { NftRule([.destinationPort($0, 53), .verdict(.goto(names.memberChain))]) }
            for ipv4 in [true, false] {
                let stay = tunnelDestinations(profile, facts: facts, ipv4: ipv4)
                guard !stay.isEmpty else { continue }
                let set = names.tunnelDestinations(ipv4: ipv4)
                table.sets.append(NftSet(name: set, key: .address(ipv4: ipv4), elements: stay.map { NftElement(key: .prefix($0)) },
                                         comment: "profile \(profile.name): the tunnel's networks and route.networks, tunneled though private or bypassed", interval: true))
                classify.append(NftRule([.destinationInSet(ipv4: ipv4, set: set, negated: false), .verdict(.goto(names.memberChain))]))
            }
            for ipv4 in [true, false] where !profile.bypassDomains.isEmpty {
                let set = names.tunneledDomainSet(ipv4: ipv4)
                table.sets.append(NftSet(name: set, key: .address(ipv4: ipv4), comment: "profile \(profile.name): addresses of names not bypassed, from DNS answers", timeout: true))
                classify.append(NftRule([.destinationInSet(ipv4: ipv4, set: set, negated: false), .verdict(.goto(names.memberChain))],
                                        comment: ipv4 ? "profile \(profile.name): an address a bypassed name shares stays in the tunnel" : nil))
            }
            for ipv4 in [true, false] where !profile.bypassDomains.isEmpty {
                let set = names.bypassDomainSet(ipv4: ipv4)
                table.sets.append(NftSet(name: set, key: .address(ipv4: ipv4), comment: "profile \(profile.name): addresses of bypass.domains, from DNS answers", timeout: true))
                classify.append(NftRule([.destinationInSet(ipv4: ipv4, set: set, negated: false), .verdict(.goto(names.directChain))]))
            }
            for ipv4 in [true, false] where profile.allowLAN {
                classify.append(NftRule([.destinationInSet(ipv4: ipv4, set: ipv4 ? "lan4" : "lan6", negated: false), .verdict(.goto(names.directChain))]))
            }
            if profile.allowMulticast {
                multicastUsed = true
                for ipv4 in [true, false] {
                    classify.append(NftRule([.destinationInSet(ipv4: ipv4, set: ipv4 ? "multicast4" : "multicast6", negated: false),
                                             .verdict(.goto(names.directChain))]))
                }
            }
            classify.append(NftRule([.verdict(.goto(names.memberChain))]))
            table.counters.append(NftCounter(name: names.directCounter, comment: "profile \(profile.name): member packets sent direct (allow_lan, bypass.domains)"))
            table.chains += [
                NftChain(name: names.classifyChain, rules: classify),
                NftChain(name: names.directChain, rules: [
                    NftRule([.setMark(clear: mask, set: bypass), .setConntrackMark(clear: mask, set: bypass),
                             .namedCounter(names.directCounter), .verdict(.accept)],
                            comment: "profile \(profile.name): direct"),
                ]),
            ]
        }
        if policy.profiles.contains(where: \.allowLAN) {
            table.sets += [rangeSet("lan4", lan4, comment: "private (RFC 1918) and link-local"), rangeSet("lan6", lan6, comment: "unique local and link-local")]
        }
        if multicastUsed {
            table.sets += [rangeSet("multicast4", multicast4, comment: "multicast and broadcast"), rangeSet("multicast6", multicast6, comment: "multicast")]
        }
        for profile in policy.profiles where !profile.routeDomains.isEmpty {
            for ipv4 in [true, false] {
                table.sets.append(NftSet(name: ProfileObjectNames(profile.name).routeDomainSet(ipv4: ipv4), key: .address(ipv4: ipv4),
                                         comment: "profile \(profile.name): addresses of route.domains, from DNS answers", timeout: true))
            }
        }
        for ipv4 in [true, false] {
            let elements = policy.profiles.flatMap { profile in
                profile.routeNetworks.filter { $0.isIPv4 == ipv4 }
                    .map { NftElement(key: .prefix($0), verdict: .jump(ProfileObjectNames(profile.name).memberChain)) }
            }
            guard !elements.isEmpty else { continue }
            table.sets.append(NftSet(name: routeNetworksMap(ipv4: ipv4), key: .address(ipv4: ipv4), data: .verdict, elements: elements,
                                     comment: "route.networks: into the profile's tunnel, whoever connects", interval: true))
        }
    }

    static func routeNetworksMap(ipv4: Bool) -> String { "route_networks\(ipv4 ? 4 : 6)" }

    /// Private networks that stay in the tunnel: the tunnel's own and route.networks.
    static func tunnelDestinations(_ profile: Profile, facts: RuntimeFacts, ipv4: Bool) -> [IPPrefix] {
        IPPrefix.covering((profile.routeNetworks + (facts.tunnelNetworks[profile.tunnel.interfaceName] ?? [])).filter { $0.isIPv4 == ipv4 })
    }

    /// For a member's listener (InboundRules), with allow_lan: a new connection from a LAN
    /// address (not one of the networks that stay in the tunnel) is accepted and goes direct.
    static func lanSources(_ profile: Profile, policy: Policy, facts: RuntimeFacts) -> [NftRule] {
        guard profile.allowLAN else { return [] }
        let names = ProfileObjectNames(profile.name), mask = policy.routing.markMask
        return [true, false].map { ipv4 in
            var statements: [NftStatement] = [.sourceInSet(ipv4: ipv4, set: ipv4 ? "lan4" : "lan6", negated: false)]
            if !tunnelDestinations(profile, facts: facts, ipv4: ipv4).isEmpty {
                statements.append(.sourceInSet(ipv4: ipv4, set: names.tunnelDestinations(ipv4: ipv4), negated: true))
            }
            return NftRule(statements + [.setConntrackMark(clear: mask, set: policy.routing.bypassMark), .verdict(.accept)],
                           comment: ipv4 ? "profile \(profile.name): allow_lan, from the LAN" : nil)
        }
    }

    /// For route_output, after the member lookups: non-members' new connections to
    /// route.networks (only new ones: a local server's answer to a client in such a network
    /// must leave the way the client's packets came in).
    static func routeRules(_ policy: Policy) -> [NftRule] {
        let networks = [true, false].compactMap { ipv4 in
            policy.profiles.contains { $0.routeNetworks.contains { $0.isIPv4 == ipv4 } }
                ? NftRule([.conntrackStateNew, .destinationVerdictMap(ipv4: ipv4, map: routeNetworksMap(ipv4: ipv4))]) : nil
        }
        let domains = policy.profiles.filter { !$0.routeDomains.isEmpty }.flatMap { profile in
            let names = ProfileObjectNames(profile.name)
            return [true, false].map { ipv4 in
                NftRule([.conntrackStateNew, .destinationInSet(ipv4: ipv4, set: names.routeDomainSet(ipv4: ipv4), negated: false),
                         .verdict(.jump(names.memberChain))], comment: ipv4 ? "route.domains of profile \(profile.name)" : nil)
            }
        }
        return networks + domains
    }

    private static func rangeSet(_ name: String, _ prefixes: [String], comment: String) -> NftSet {
        NftSet(name: name, key: .address(ipv4: !name.hasSuffix("6")), elements: prefixes.map { NftElement(key: .prefix(IPPrefix($0)!)) },
               comment: comment, interval: true)
    }
}
