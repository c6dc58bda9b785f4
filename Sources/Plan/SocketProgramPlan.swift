import Policy
import SocketPrograms

/// A cgroup and what the socket programs do for the sockets made in it.
public struct SocketProgramAttachment: Hashable, Sendable, Comparable {
    /// Relative to the cgroup2 root ("" is the root itself).
    public var cgroup: String
    /// The cgroup's id when planned: a cgroup made again under the same path is another
    /// cgroup and is attached anew.
    public var id: UInt64
    public var settings: SocketSettings

    public init(cgroup: String, id: UInt64, settings: SocketSettings) {
        self.cgroup = cgroup
        self.id = id
        self.settings = settings
    }

    public static func < (a: Self, b: Self) -> Bool { (a.cgroup, a.id) < (b.cgroup, b.id) }
}

/// A planned cgroup the kernel lacks programs of (it refused them, or they were taken off
/// and could not be put back): its members' sockets would not carry the profile's mark, so
/// the table holds it (UnguardedRules) and vpnd places nobody there.
public struct UnguardedCgroup: Hashable, Sendable {
    public var id: UInt64
    /// Its programs the kernel does not have, in `SocketProgram.inUse` order.
    public var missing: [SocketProgram]
    /// The kernel's refusal, as vpnd logged it.
    public var reason: String

    public init(id: UInt64, missing: [SocketProgram], reason: String) {
        self.id = id
        self.missing = missing
        self.reason = reason
    }
}

/// cgroup -> mark. Membership is decided where the socket is made: every cgroup the policy
/// gives to a profile (the profile's slice, a user's `vpn-NAME.slice`, a listed app's scope)
/// has the socket programs attached, and a socket made there is born with the profile's
/// mark, before its first route lookup. Its route and its source address come from the
/// profile's table when it connects (RoutingPlan), so a member's own address is the
/// tunnel's (`getsockname()`, what SIP, FTP or WebRTC write into their payload) and nothing
/// re-routes or NATs its packets: the kernel tracks no connection for it.
/// - A member's packet whose mark is no profile's (a socket made before the cgroup had its
///   programs, or the bypass mark set by a member with CAP_NET_RAW) is dropped at the
///   cgroup's egress, counted (`guardMarks`); so is one of a socket made in another network
///   namespace (a container of the profile), but on its own loopback (`guardNamespace`).
/// - A connect to systemd-resolved's varlink socket goes to the profile's (vpnd answers its
///   members' nss-resolve lookups through their proxy), one to nscd's is refused
///   (`NameFollowing`), where the kernel has the Unix-socket hooks (`resolveSockets`).
/// - Port 853 is refused at connect() where domain rules apply (EncryptedDNSRules), before
///   any packet exists. Its DNS, UDP and TCP, is routed to the proxy (DNSRouting).
/// - The bypass slice gives the bypass mark (no profile's table routes it).
/// - The profile parent refuses an internet socket that none of these gave a mark: a
///   cgroup made below it that vpnd has not attached yet (a slice systemd made again), also
///   while vpnd is not running; and the root refuses one made beside the parent or one of
///   its ancestors in a cgroup vpnd does not know (the parent itself made again: its
///   programs went with it), in vpnd's network namespace (`PathGuard`).
/// The attachments are the kernel's: they hold while vpnd is stopped or restarting, as the
/// nft killswitch does. In system mode the root cgroup refuses port 853 for sockets without
/// a mark (SystemRules); its members' routes are routing rules, not marks
/// (the root is never given a birth mark: vpnd's and the tunnel daemons' sockets are there).
enum SocketProgramPlan {
    static func attachments(_ policy: Policy, facts: RuntimeFacts) -> [SocketProgramAttachment] {
        let mask = policy.routing.markMask
        var planned: [String: SocketProgramAttachment] = [:]
        func plan(_ path: String, _ id: UInt64?, _ settings: SocketSettings) {
            guard let id else { return }
            planned[path] = SocketProgramAttachment(cgroup: path, id: id, settings: settings)
        }
        for profile in policy.profiles {
            let path = profile.cgroupPath(parent: facts.cgroupParent)
            plan(path, facts.cgroupIDs[path], member(profile, policy: policy, facts: facts))
        }
        for (path, joined) in facts.joinedCgroups {
            if let profile = policy.profile(named: joined.profile) { plan(path, joined.id, member(profile, policy: policy, facts: facts)) }
        }
        if policy.usesBypassSlice {
            let path = ExecutableRules.bypassCgroup(parent: facts.cgroupParent)
            plan(path, facts.cgroupIDs[path], SocketSettings(mark: policy.routing.bypassMark, mask: mask))
        }
        for (path, id) in facts.leftBehind { plan(path, id, leftBehind(mask: mask)) }
        if !policy.profiles.isEmpty {
            plan(facts.cgroupParent, facts.cgroupsAlongParent[facts.cgroupParent], SocketSettings(mark: 0, mask: mask, requireMark: true))
        }
        var root = SocketSettings(mark: 0, mask: mask, guardPath: pathGuard(policy, facts: facts) != nil)
        if let system = policy.systemProfile, EncryptedDNSRules.refuses(system, in: policy), servesDNS(system, facts: facts) {
            root.refuseEncryptedDNS = true
            root.unmarkedOnly = true
        }
        if !root.programs.isEmpty { plan("", facts.rootCgroupID, root) }
        return planned.values.sorted()
    }

    /// A removed (or renamed) profile's cgroup that still has processes: held. Its
    /// processes' new internet sockets are refused (no mark, and one is required), and
    /// every packet of their existing ones, born with the removed profile's mark, is dropped
    /// (a guard that takes no mark): whatever the table routes that mark to now, and
    /// without a policy at all. vpnd places nobody there; a process leaves by `vpnctl move`
    /// or by ending.
    static func leftBehind(mask: UInt32) -> SocketSettings {
        SocketSettings(mark: 0, mask: mask, requireMark: true, guardMarks: [])
    }

    static func member(_ profile: Profile, policy: Policy, facts: RuntimeFacts) -> SocketSettings {
        SocketSettings(mark: profile.mark.value, mask: policy.routing.markMask, guardMarks: policy.profiles.map(\.mark.value),
                       refuseEncryptedDNS: servesDNS(profile, facts: facts) && EncryptedDNSRules.refuses(profile, in: policy), guardNamespace: true,
                       resolveSocket: servesDNS(profile, facts: facts) ? facts.resolveSockets[profile.name] : nil)
    }

    /// The cgroups along the parent, when every level of its path was read (without the
    /// listing of a level nothing there can be told unknown).
    static func pathGuard(_ policy: Policy, facts: RuntimeFacts) -> PathGuard? {
        guard !policy.profiles.isEmpty, facts.rootCgroupID != nil else { return nil }
        var components: [UInt64] = []
        var prefix = ""
        for component in facts.cgroupParent.split(separator: "/") {
            prefix += (prefix.isEmpty ? "" : "/") + component
            guard let id = facts.cgroupsAlongParent[prefix] else { return nil }
            components.append(id)
        }
        guard !components.isEmpty else { return nil }
        var known = Dictionary(facts.cgroupsAlongParent.map { ($0.value, false) }, uniquingKeysWith: { a, _ in a })
        for id in components { known[id] = true }
        return PathGuard(depth: components.count, known: known)
    }

    /// A profile that steps aside on a trusted network (`disconnect`) leaves its members'
    /// DNS to the host's resolver, as all their traffic goes direct.
    static func servesDNS(_ profile: Profile, facts: RuntimeFacts) -> Bool {
        facts.trustedAction(profile) != .disconnect
    }
}
