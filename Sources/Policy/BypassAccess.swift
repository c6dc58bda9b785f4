/// Who a process is, as far as a rule of the policy cares: its user and every group it is in.
public struct Credentials: Hashable, Sendable {
    public var uid: UInt32
    /// The primary group and the supplementary ones.
    public var groups: [UInt32]

    public init(uid: UInt32, groups: [UInt32]) {
        self.uid = uid
        self.groups = groups
    }
}

/// Who may go outside the profiles. There are two ways out, and one rule decides both:
/// `vpnexec --bypass` (the caller's credentials, from the control socket) and an exec of a
/// `bypass.executables` program, which vpnd moves into `vpn-bypass.slice` (the exec'ing
/// process's credentials). Whoever may run a bypassed program may run any code outside the
/// tunnel through it (LD_PRELOAD, BASH_ENV, a launcher script's environment), so a bypass by
/// executable is worth no less than `vpnexec --bypass` and is granted to no one else.
extension Policy {
    /// nil when `who` may bypass: root always, anyone else only where `[system]
    /// bypass.users` names the uid or `bypass.groups` one of the groups. Otherwise the rule
    /// that refuses, as words that follow "may not ...: ".
    public func bypassRefusal(_ who: Credentials) -> String? {
        guard let access = system.bypass else {
            return who.uid == 0 ? nil : "no policy file sets [system] bypass.users or bypass.groups, so only root may"
        }
        return access.allows(uid: who.uid, groups: who.groups) ? nil : "the rule at \(access.location) allows \(access.summary)"
    }

    /// What `vpnctl check` and vpnd (at load) warn of: a profile lists bypass.executables,
    /// but no `[system] bypass` names any user or group, so only root's launches of them
    /// go direct and everyone else's stay in the tunnel. One line a profile, at the first
    /// program it lists ("FILE:LINE:COL: warning: ...").
    public var bypassExecutablesWarnings: [String] {
        if let access = system.bypass, !access.users.isEmpty || !access.groups.isEmpty { return [] }
        let why = system.bypass.map { "the rule at \($0.location) names no user or group" }
            ?? "no policy file sets [system] bypass.users or bypass.groups"
        return profiles.compactMap { profile -> String? in
            guard let first = profile.bypassExecutables.min(by: { Self.earlier(profile.executableLocations[$0], profile.executableLocations[$1]) }) else { return nil }
            let at = profile.executableLocations[first].map { "\($0): " } ?? ""
            return "\(at)warning: profile \"\(profile.name)\": bypass.executables go direct only when root starts them: \(why) (who may bypass, as for vpnexec --bypass); anyone else's launch stays in the tunnel"
        }
    }

    private static func earlier(_ a: SourceLocation?, _ b: SourceLocation?) -> Bool {
        guard let a, let b else { return a != nil }
        return (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }
}
