import Nftables
import Policy
import Routing

/// policy + facts -> desired kernel state. Pure: no I/O, same input, same output.
public enum Planner {
    /// The cgroups vpnd keeps: each profile's slice, and the bypass slice when used.
    public static func cgroups(_ policy: Policy, parent: String) -> [String] {
        policy.profiles.map { $0.cgroupPath(parent: parent) } + (policy.usesBypassSlice ? [ExecutableRules.bypassCgroup(parent: parent)] : [])
    }

    public static func plan(_ policy: Policy, facts: RuntimeFacts) -> DesiredState {
        let routing = policy.routing
        var table = NftTable(family: .inet, name: vpnexecTableName)
        ExceptionRules.add(policy, facts: facts, to: &table)
        TransportRules.add(policy, facts: facts, to: &table)
        MembershipRules.add(policy, facts: facts, to: &table)
        InboundRules.add(policy, facts: facts, to: &table)
        DNSRules.add(policy, facts: facts, to: &table)
        KillswitchRules.add(policy, facts: facts, to: &table)
        var sysctls: [Sysctl] = []
        if !policy.profiles.isEmpty {
            // Replies on a member connection carry the profile's mark (restored from the
            // connection in prerouting); with src_valid_mark the reverse-path check looks
            // them up in the profile's table, so strict rp_filter accepts them.
            sysctls.append(Sysctl("net/ipv4/conf/all/src_valid_mark", "1"))
        }
        return DesiredState(
            nft: table,
            rules: RoutingPlan.rules(policy.profiles, routing: routing),
            routes: RoutingPlan.routes(policy.profiles, links: facts.links, trusted: facts) + LANRoutes.routes(policy.profiles, facts: facts),
            sysctls: sysctls,
            cgroups: cgroups(policy, parent: facts.cgroupParent),
            socketMarks: BirthMarks.attachments(policy, facts: facts))
    }
}
