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
}
