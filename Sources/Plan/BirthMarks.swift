import Policy

/// A cgroup whose sockets are born with a mark: the cgroup socket program attached there
/// writes `mark` into every socket made in it (or below it, unless a deeper attached
/// cgroup marked it first), before the socket's first route lookup.
public struct SocketMarkAttachment: Hashable, Sendable, Comparable {
    /// Relative to the cgroup2 root.
    public var cgroup: String
    /// The cgroup's id when planned: a cgroup made again under the same path is another
    /// cgroup and gets an attachment of its own.
    public var id: UInt64
    public var mark: UInt32

    public init(cgroup: String, id: UInt64, mark: UInt32) {
        self.cgroup = cgroup
        self.id = id
        self.mark = mark
    }

    public static func < (a: Self, b: Self) -> Bool { (a.cgroup, a.id) < (b.cgroup, b.id) }
}

/// Sockets are born in their tunnel: every cgroup the membership maps send to a profile
/// (the profile's own cgroup, a unit or app scope joined to it by name) gives its sockets
/// the profile's mark at creation, and the bypass slice gives its sockets the bypass mark.
/// The route and the source address are then chosen from the mark's table when the
/// socket connects, so a member's own address (`getsockname()`, and what protocols such as
/// SIP, FTP or WebRTC write into their payload) is the tunnel's, and its packets need no
/// re-route and no source NAT. nftables stays what decides membership and holds the
/// killswitch (MembershipRules, KillswitchRules): a socket made before its process joined
/// is marked there, as are exception flows (allow_lan, bypass.domains).
/// The cgroup2 root is never attached: in system mode, where the whole host is the
/// system profile's, that would mark vpnd's and the tunnel daemons' own sockets; system
/// mode's members outside the profile cgroups are marked by nftables.
enum BirthMarks {
    static func attachments(_ policy: Policy, facts: RuntimeFacts) -> [SocketMarkAttachment] {
        var marks: [String: (UInt64, UInt32)] = [:]
        for profile in policy.profiles {
            let path = profile.cgroupPath(parent: facts.cgroupParent)
            if let id = facts.cgroupIDs[path] { marks[path] = (id, profile.mark.value) }
        }
        if policy.usesBypassSlice {
            let path = ExecutableRules.bypassCgroup(parent: facts.cgroupParent)
            if let id = facts.cgroupIDs[path] { marks[path] = (id, policy.routing.bypassMark) }
        }
        for (path, joined) in facts.joinedCgroups {
            if let profile = policy.profile(named: joined.profile) { marks[path] = (joined.id, profile.mark.value) }
        }
        return marks.filter { !$0.key.split(separator: "/").isEmpty }
            .map { SocketMarkAttachment(cgroup: $0.key, id: $0.value.0, mark: $0.value.1) }.sorted()
    }
}
