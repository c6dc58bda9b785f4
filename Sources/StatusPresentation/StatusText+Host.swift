import Control

/// vpnd's host-wide lines of `vpnctl status`, read from their structures.
extension StatusText {
    /// The cgroups whose sockets are born marked, as one line.
    static func birthMarks(_ cgroups: [BirthMarkReport]) -> String {
        let marked = cgroups.filter { $0.state == BirthMarkReport.marked }.map(\.cgroup)
        guard marked.isEmpty else { return Plural.count(marked.count, "cgroup") + ": " + marked.joined(separator: ", ") }
        return cgroups.isEmpty ? "none yet (no profile cgroup exists)" : "none: the kernel refused them (held, above)"
    }

    /// Where members' queries arrive, for how many profiles.
    static func dnsSteering(_ s: DNSSteeringStatus) -> String {
        guard s.state == DNSSteeringStatus.routed else {
            return "off: \(s.failure ?? "?"); members' DNS queries are refused (none leaves)"
        }
        return "UDP and TCP queries routed to \(s.addresses.joined(separator: " and ")) for \(Plural.count(s.profiles, "profile"))"
            + (s.ipv6Refused ? "; IPv6 ones refused (IPv6 is off on lo)" : "")
    }
}
