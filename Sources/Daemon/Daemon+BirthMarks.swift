extension Daemon {
    /// For status: the cgroups whose sockets are born marked now, or why none are.
    var birthMarksSummary: String {
        if let reason = birthMarksUnavailable { return "off: \(reason)" }
        guard options.birthMarks else { return "off" }
        let attached = applier.socketMarksAttached ?? []
        return attached.isEmpty ? "none yet (no profile cgroup exists)" : "\(attached.count) cgroup(s): " + attached.joined(separator: ", ")
    }
}
