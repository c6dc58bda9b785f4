import Control
import Plan
import Policy

/// `vpnctl explain`: which rule put a cgroup where it is and what that means for its
/// traffic, from the policy in force and vpnd's status (which holds what the kernel has: the
/// socket programs' marks, the tunnels, the proxies, the containers). The route lookups are
/// the caller's (Daemon+Explain): this part is pure, for tests (ExplainerTests).
enum Explainer {
    /// `namespaceID`: the id vpnd's namespace gives the process's network namespace, where
    /// it has one (vpnd's own has none).
    static func explain(cgroup: String, pid: Int32?, namespaceID: Int32? = nil, policy: Policy, cgroupParent: String, status: StatusReport) -> Explanation {
        let (placement, profileName, rule) = attribute(cgroup, policy: policy, cgroupParent: cgroupParent,
                                                      joinedCgroups: status.profiles.map { ($0.name, $0.joinedCgroups) })
        let profile = profileName.flatMap { name in status.profiles.first { $0.name == name } }
        var explanation = Explanation(pid: pid, cgroup: cgroup, placement: placement, rule: rule, dns: dns(of: profile))
        explanation.profile = profileName
        if let birth = birthMark(of: cgroup, in: status.birthMarks) {
            explanation.markFrom = birth.cgroup
            explanation.mark = birth.mark
            explanation.held = birth.state == BirthMarkReport.held
        } else if placement == Explanation.system, let profile {
            // System mode marks nobody's sockets: its routing rules take every unmarked
            // packet of the host into its table.
            explanation.mark = nil
            explanation.rule += " (its unmarked packets take table \(profile.table))"
        }
        if status.heldCgroups.contains(where: { cgroup == $0.cgroup || cgroup.hasPrefix($0.cgroup + "/") }) { explanation.held = true }
        if let profile {
            explanation.tunnel = profile.tunnel
            explanation.killswitch = ExplainedKillswitch(enabled: profile.killswitch, tunnelState: profile.tunnel.state,
                                                         holding: profile.killswitch && profile.tunnel.state != "up")
            var exceptions = ExplainedExceptions()
            exceptions.allowLAN = profile.exceptions.allowLAN
            exceptions.routeNetworks = profile.exceptions.routeNetworks.count
            exceptions.bypassExecutables = profile.exceptions.bypassExecutables.count
            exceptions.routeExecutables = profile.exceptions.routeExecutables.count
            exceptions.bypassDomains = profile.dns?.bypassDomainCount ?? 0
            exceptions.routeDomains = profile.dns?.routeDomainCount ?? 0
            explanation.exceptions = exceptions
        }
        explanation.namespace = namespaceID.map { container($0, status: status) }
        return explanation
    }

    /// Where the cgroup stands and why, with the policy's file:line. Pure.
    static func attribute(_ cgroup: String, policy: Policy, cgroupParent: String, joinedCgroups: [(profile: String, cgroups: [String])]) -> (placement: String, profile: String?, rule: String) {
        func within(_ path: String) -> Bool { cgroup == path || cgroup.hasPrefix(path + "/") }
        let bypass = ExecutableRules.bypassCgroup(parent: cgroupParent)
        if within(bypass) {
            return (Explanation.bypass, nil, "the bypass slice \(bypass) (vpnexec --bypass or a bypass.executables program): outside every profile")
        }
        for profile in policy.profiles where within(profile.cgroupPath(parent: cgroupParent)) {
            return (Explanation.profileCgroup, profile.name,
                    "profile \(profile.name)'s cgroup (vpnexec -p \(profile.name), vpnctl move or a route.executables program; the profile is at \(profile.location))")
        }
        // A cgroup systemd made joins where it stands, as the last apply decided it
        // (UnitCgroups): its processes and its children's are the profile's.
        for (name, joined) in joinedCgroups {
            guard let path = joined.first(where: within), let profile = policy.profile(named: name) else { continue }
            let unit = String(path.split(separator: "/").last ?? "")
            let why = UnitCgroups.appID(ofUnit: unit).map { "app \($0) is in profile \(name)'s apps (\(profile.location))" }
                ?? "\(unit) is profile \(name)'s slice in its user's manager (\(profile.location))"
            return (Explanation.joined, name, "joined cgroup \(path): \(why)")
        }
        if let system = policy.systemProfile {
            let at = policy.system.location.map { " (\($0))" } ?? ""
            return (Explanation.system, system.name, "system mode: every process placed nowhere else is profile \(system.name)'s, [system] profile\(at)")
        }
        return (Explanation.outside, nil, "no profile: not in a profile's cgroup, the bypass slice or a joined unit")
    }

    /// A program of an executable list that the process runs, which is why vpnd placed it
    /// (or would have: a process started in its profile already stays), with the list's
    /// file:line; nil when its program is in no list that leads where it is. Pure.
    static func executableRule(_ executable: String, placement: String, profile name: String?, policy: Policy) -> String? {
        func at(_ profile: Profile) -> String { profile.executableLocations[executable].map { " (\($0))" } ?? "" }
        switch placement {
        case Explanation.profileCgroup:
            guard let profile = name.flatMap(policy.profile(named:)), profile.routeExecutables.contains(executable) else { return nil }
            return "it runs \(executable), in profile \(profile.name)'s route.executables\(at(profile)): vpnd moves whoever runs it into the profile"
        case Explanation.bypass:
            guard let profile = policy.profiles.first(where: { $0.bypassExecutables.contains(executable) }) else { return nil }
            return "it runs \(executable), in profile \(profile.name)'s bypass.executables\(at(profile)): vpnd moves it out of the profiles when its user may bypass"
        default:
            return nil
        }
    }

    /// The socket programs' settings of the cgroup or the nearest cgroup above it that has
    /// them (the kernel runs an ancestor's programs for its descendants).
    static func birthMark(of cgroup: String, in marks: [BirthMarkReport]) -> BirthMarkReport? {
        marks.filter { $0.cgroup.isEmpty || cgroup == $0.cgroup || cgroup.hasPrefix($0.cgroup + "/") }
            .max { $0.cgroup.count < $1.cgroup.count }
    }

    static func dns(of profile: ProfileStatus?) -> ExplainedDNS {
        guard let profile else {
            var dns = ExplainedDNS(port53: ExplainedDNS.host)
            dns.namesNotFollowed = "not a member: systemd-resolved and nscd answer it as any process of the host"
            return dns
        }
        guard let status = profile.dns else {
            var dns = ExplainedDNS(port53: ExplainedDNS.refused)
            dns.failure = "profile \(profile.name) has no DNS proxy"
            return dns
        }
        // A proxy with no server to ask refuses every query (DNSStatus.serversFrom "none").
        let answers = status.failure == nil && !status.servers.isEmpty
        var dns = ExplainedDNS(port53: answers ? ExplainedDNS.proxy : ExplainedDNS.refused)
        dns.servers = status.servers
        dns.serversFrom = status.serversFrom
        dns.failure = status.failure ?? (status.servers.isEmpty
            ? "profile \(profile.name) has no resolvers (no dns key, none in its tunnel's file, none the host has for \(profile.tunnel.interface))" : nil)
        dns.namesSocket = status.names?.socket
        dns.namesNotFollowed = status.names == nil ? "this vpnd does not follow them" : status.names?.failure
        return dns
    }

    /// The network namespace vpnd's numbers `id`: a container of a profile it routes, lets
    /// out to its relay or holds, or one it does not know (a veth of ours reaches it, or someone asked).
    static func container(_ id: Int32, status: StatusReport) -> ExplainedNamespace {
        if let routed = status.routedNamespaces.first(where: { $0.namespaceID == id }) {
            var namespace = ExplainedNamespace(state: ExplainedNamespace.routed)
            namespace.namespaceID = id
            namespace.interfaces = routed.interfaces
            return namespace
        }
        if let relayed = status.relayedNamespaces.first(where: { $0.namespaceID == id }) {
            var namespace = ExplainedNamespace(state: ExplainedNamespace.relayed)
            namespace.namespaceID = id
            namespace.interfaces = relayed.interfaces
            namespace.relay = relayed.relay
            return namespace
        }
        var namespace = ExplainedNamespace(state: ExplainedNamespace.unknown)
        namespace.namespaceID = id
        if let held = status.heldNamespaces.first(where: { $0.namespaceID == id }) {
            namespace.state = ExplainedNamespace.held
            namespace.reason = held.reason
        }
        return namespace
    }
}
