import Control
import Policy

/// Who may do what, and the refusal messages that say which rule decided.
enum Authorization {
    /// The profile named, or why not: an unknown name is answered with the profiles `peer`
    /// may use (every one for root), so a user's typo says nothing of the others.
    static func profile(named name: String, in policy: Policy, directory: String, for peer: Peer) -> Result<Profile, RequestFailure> {
        if let profile = policy.profile(named: name) { return .success(profile) }
        let root = peer.uid == 0
        let usable = policy.profiles.filter { root || check(peer, mayUse: $0) == nil }.map(\.name)
        return .failure(RequestFailure(UnknownProfile.message(name, among: usable, everyProfile: root, policyDirectory: root ? directory : nil)))
    }

    static func check(_ peer: Peer, mayUse profile: Profile) -> RequestFailure? {
        guard !profile.access.allows(uid: peer.uid, groups: peer.groups) else { return nil }
        return RequestFailure("\(peer.userName) may not use profile \"\(profile.name)\": the rule at \(profile.access.location) allows \(profile.access.summary)")
    }

    /// `vpnexec --bypass`: root, or whom `[system] bypass` names (Policy.bypassRefusal, the
    /// rule an exec of a bypass.executables program is judged by too).
    static func check(_ peer: Peer, mayBypass policy: Policy) -> RequestFailure? {
        policy.bypassRefusal(Credentials(uid: peer.uid, groups: peer.groups)).map {
            RequestFailure("\(peer.userName) may not start commands outside the profiles: \($0)")
        }
    }

    /// Whether the caller may take process `pid` out of cgroup `source` into the profile
    /// cgroup `destination`. The kernel would not let a user move a process between cgroups
    /// it does not own; vpnd moves as root, so it keeps to the same spirit: a user moves
    /// only processes that nothing confines, i.e. in its own session or user manager
    /// (`user.slice/user-UID.slice/...`, systemd's per-user tree) or in the root cgroup
    /// (a host or container without a cgroup manager), never out of a system unit (whose
    /// limits and firewall rules are there for a reason), out of another profile, or out of
    /// anything else an administrator placed it in. Root may move anything.
    static func check(_ peer: Peer, mayMove pid: Int32, from source: String, into destination: String,
                      profileParent: String, policy: Policy) -> RequestFailure? {
        guard let rule = moveRefusal(uid: peer.uid, from: source, into: destination, profileParent: profileParent) else { return nil }
        let place = source.isEmpty ? "the root cgroup" : source
        let profile = policy.profiles.first { source == $0.cgroupPath(parent: profileParent) || source.hasPrefix($0.cgroupPath(parent: profileParent) + "/") }
        let what = profile.map { "profile \($0.name)'s cgroup \(place)" } ?? place
        return RequestFailure("\(peer.userName) may not move pid \(pid) out of \(what): \(rule)")
    }

    /// The rule that refuses the move, or nil. Pure, for tests.
    static func moveRefusal(uid: UInt32, from source: String, into destination: String, profileParent: String) -> String? {
        if uid == 0 || source == destination || source.hasPrefix(destination + "/") || source.isEmpty { return nil }
        if source == profileParent || source.hasPrefix(profileParent + "/") {
            return "only root may take a process out of a profile (a user may run it again with vpnexec instead)"
        }
        if source.hasPrefix("user.slice/user-\(uid).slice/") { return nil }
        return "a user may move only processes of its own session or user manager (user.slice/user-\(uid).slice/...) or of the root cgroup, never out of a system unit or a cgroup an administrator placed them in; root may move any"
    }

    static func checkRoot(_ peer: Peer, action: String) -> RequestFailure? {
        peer.uid == 0 ? nil : RequestFailure("only root may \(action) (you are \(peer.userName))")
    }
}

struct RequestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
