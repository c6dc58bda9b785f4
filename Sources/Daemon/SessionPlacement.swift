/// Where `vpnctl move --out` takes a process: where its user's session would have it, the
/// place it would be had it never been moved into a profile. Pure, for tests.
enum SessionPlacement {
    /// - a process of a logind session (logind names sessions after the audit session id):
    ///   that session's scope, `user.slice/user-UID.slice/session-ID.scope`, while it exists;
    /// - where no cgroup manager places processes (systemd is not PID 1): the root cgroup
    ///   (""), where every process starts there;
    /// - else nil: under systemd a process of no live session was started by a unit, and
    ///   which unit is not vpnd's to guess.
    static func destination(uid: UInt32, sessionID: UInt32?, systemdManagesCgroups: Bool, exists: (String) -> Bool) -> String? {
        if let sessionID {
            let scope = "user.slice/user-\(uid).slice/session-\(sessionID).scope"
            if exists(scope) { return scope }
        }
        return systemdManagesCgroups ? nil : ""
    }
}
