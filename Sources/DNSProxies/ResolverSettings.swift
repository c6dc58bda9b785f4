import DNS
import Plan
import Policy

/// What a profile's resolver is built from, as one value: a change rebuilds the resolver.
struct ResolverSettings: Hashable {
    var profile: String
    var configuration: DNSProxyConfiguration
    /// Its upstream sockets' mark: the profile's (routed into its tunnel) and the proxy's
    /// bit (not routed back to a proxy).
    var mark: UInt32
    var steered: SteeredQueries

    /// One resolver per profile of `policy`, with the profile's servers (`chosen`: its
    /// `dns`, else its tunnel's) and every list whose sets its answers can fill: its own
    /// bypass.domains (and then the tunneled sets for every other name), and every
    /// profile's route.domains.
    static func all(_ policy: Policy, resolvers chosen: [String: ProfileResolvers]) -> [String: ResolverSettings] {
        var wanted: [String: ResolverSettings] = [:]
        let routeLists = policy.profiles.filter { !$0.routeDomains.isEmpty }.map { profile in
            let names = ProfileObjectNames(profile.name)
            return DNSDomainSets(patterns: profile.routeDomains, ipv4Set: names.routeDomainSet(ipv4: true), ipv6Set: names.routeDomainSet(ipv4: false))
        }
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let servers = (chosen[profile.name]?.servers ?? profile.dnsServers).map { DNSServer(address: $0) }
            var lists = routeLists
            var tunneled: DNSTunneledSets?
            if !profile.bypassDomains.isEmpty {
                lists.insert(DNSDomainSets(patterns: profile.bypassDomains, ipv4Set: names.bypassDomainSet(ipv4: true),
                                           ipv6Set: names.bypassDomainSet(ipv4: false)), at: 0)
                tunneled = DNSTunneledSets(bypassList: 0, ipv4Set: names.tunneledDomainSet(ipv4: true), ipv6Set: names.tunneledDomainSet(ipv4: false))
            }
            let configuration = DNSProxyConfiguration(servers: servers, domainSets: Array(lists.prefix(DomainList.maxLists)), tunneledSets: tunneled,
                                                      elementTimeout: policy.dns.minTTL...max(policy.dns.minTTL, policy.dns.maxTTL))
            let steered = SteeredQueries(key: profile.index, mask: policy.routing.markMask,
                                         marks: [profile.mark.value] + (policy.systemProfile?.name == profile.name ? [0] : []))
            wanted[profile.name] = ResolverSettings(profile: profile.name, configuration: configuration,
                                                    mark: profile.mark.value | policy.routing.proxyMark, steered: steered)
        }
        return wanted
    }
}
