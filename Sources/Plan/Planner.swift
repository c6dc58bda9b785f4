import Nftables
import Policy
import Routing

/// policy + facts -> desired kernel state. Pure: no I/O, same input, same output.
public enum Planner {
    /// The cgroups vpnd keeps: each profile's slice, and the bypass slice when used.
    public static func cgroups(_ policy: Policy, parent: String) -> [String] {
        policy.profiles.map { $0.cgroupPath(parent: parent) } + (policy.usesBypassSlice ? [ExecutableRules.bypassCgroup(parent: parent)] : [])
    }

    /// The path a member's packet takes is in three places: the cgroup gives its sockets the
    /// profile's mark (SocketProgramPlan), the mark picks the profile's table and the table
    /// the tunnel (RoutingPlan), and the killswitch holds what would leave elsewhere
    /// (KillswitchRules).
    public static func plan(_ policy: Policy, facts: RuntimeFacts) -> DesiredState {
        var table = NftTable(family: .inet, name: vpnexecTableName)
        ExceptionRules.add(policy, facts: facts, to: &table)
        TransportRules.add(policy, facts: facts, to: &table)
        SystemRules.add(policy, facts: facts, to: &table)
        KillswitchRules.add(policy, facts: facts, to: &table)
        HoldDevice.add(policy, facts: facts, to: &table)
        InboundRules.add(policy, facts: facts, to: &table)
        UnguardedRules.add(policy, facts: facts, to: &table)
        ContainerRules.add(policy, facts: facts, to: &table)
        var state = DesiredState(
            nft: table,
            rules: DNSRouting.rules(policy, facts: facts) + RoutingPlan.rules(policy, facts: facts),
            routes: RoutingPlan.routes(policy.profiles, links: facts.links, trusted: facts) + DestinationRoutes.routes(policy.profiles, facts: facts)
                + DNSRouting.routes(policy, facts: facts),
            sysctls: tunnelSysctls(policy, facts: facts),
            cgroups: cgroups(policy, parent: facts.cgroupParent),
            socketPrograms: SocketProgramPlan.attachments(policy, facts: facts),
            learnedRoutes: LearnedRoutes.plan(policy, facts: facts),
            pathGuard: SocketProgramPlan.pathGuard(policy, facts: facts))
        state.transportDrains = TransportRules.drains(policy, facts: facts)
        state.addresses = DNSRouting.addresses(policy, facts: facts)
        state.namespacesLetOut = ContainerRules.letOut(policy, facts: facts)
        state.bridgeNft = ContainerRules.bridgeTable(policy, facts: facts)
        state.holdDevice = HoldDevice.wanted(policy, facts: facts)
        return state
    }

    /// Replies to a member arrive on the tunnel unmarked (nothing restores a mark from a
    /// connection), from addresses the main table routes elsewhere: the tunnel's reverse-
    /// path check is loose (a route back on any interface), where a host's is strict. The
    /// kernel takes the higher of `all` and the interface's value, so this holds either way.
    static func tunnelSysctls(_ policy: Policy, facts: RuntimeFacts) -> [Sysctl] {
        var names: [String] = []
        for profile in policy.profiles where facts.links[profile.tunnel.interfaceName] != nil && !names.contains(profile.tunnel.interfaceName) {
            names.append(profile.tunnel.interfaceName)
        }
        return names.map { Sysctl("net/ipv4/conf/\($0)/rp_filter", "2") }
    }
}
