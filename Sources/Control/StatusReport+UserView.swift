/// `vpnctl status` for a user other than root: what it may use (vpnctl(8)), nothing of the
/// host's. vpnd decides which profiles those are (the policy's `users` and `groups`).
extension StatusReport {
    /// The report as a user other than root sees it: the profiles named in `usable` (and
    /// what of the host-wide fields is about them: their cgroups' birth marks and holds,
    /// system mode's profile if it is one of them), nothing else of the host's.
    public func forUser(usable: Set<String>) -> StatusReport {
        var view = StatusReport(version: version, daemonPID: daemonPID, policyDirectory: nil, cgroupRoot: nil,
                                profiles: profiles.filter { usable.contains($0.name) })
        view.birthMarks = birthMarks.filter { $0.profile.map(usable.contains) ?? false }
        view.heldCgroups = heldCgroups.filter { $0.profile.map(usable.contains) ?? false }
        view.heldNamespaces = heldNamespaces.filter { $0.profile.map(usable.contains) ?? false }
        view.routedNamespaces = routedNamespaces.filter { usable.contains($0.profile) }
        view.relayedNamespaces = relayedNamespaces.filter { usable.contains($0.profile) }
        view.systemProfile = systemProfile.flatMap { usable.contains($0) ? $0 : nil }
        return view
    }
}
