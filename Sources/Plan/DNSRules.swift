import Nftables
import Policy

/// Members' DNS goes to their profile's proxy, wherever they sent it: UDP and TCP port 53
/// to any address (a public resolver, the LAN's, the local stub at 127.0.0.53) is
/// redirected to the proxy vpnd runs for the profile on 127.0.0.1 and ::1. The proxy asks
/// the profile's resolvers through the tunnel and fills the domain sets before it answers.
/// A member's query can then neither leave in the clear nor reach the host's resolver.
/// The redirect keys on the member's cgroup, not on the mark: the proxy's own queries
/// carry the profile's mark too (that is how they reach the tunnel) and must leave.
enum DNSRules {
    static let redirectChain = "dns_redirect"

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let port = policy.dns.port(for: profile)
            // A profile that steps aside on a trusted network (`disconnect`) leaves its
            // members' DNS to the host's resolver, as all their traffic goes direct.
            let transports: [NftTransport] = facts.trustedAction(profile) == .disconnect ? [] : [.udp, .tcp]
            table.chains.append(NftChain(name: names.dnsChain, rules: transports.map {
                NftRule([.destinationPort($0, 53), .redirect(port: port)], comment: $0 == .udp ? "profile \(profile.name): its DNS proxy" : nil)
            }))
        }
        let system = policy.systemProfile
        // In system mode the bypass slice keeps the host's DNS, as everything outside the
        // profiles does otherwise.
        let members = CgroupMaps(policy, facts: facts, name: "dns_level_", bypass: system == nil ? nil : .accept) { .jump(ProfileObjectNames($0.name).dnsChain) }
        table.sets += members.sets
        table.chains.append(NftChain(name: redirectChain, base: NftBaseChain(kind: .nat, hook: .output, priority: NftBaseChain.dstnat),
                                     rules: members.lookups(prefix: []) + (system.map(SystemRules.dns) ?? [])))
    }
}
