import Control

extension StatusText {
    /// What would escape the profile's domain rules, and the addresses bypassed names share.
    static func encryptedAndShared(_ d: DNSStatus) -> [String] {
        var lines: [String] = []
        switch d.encryptedDNS {
        case DNSStatus.encryptedRefused:
            lines.append("  encrypted DNS over TLS/QUIC (853) refused \(Plural.count(d.encryptedDNSRefused, "time")); Firefox's canary answered NXDOMAIN \(Plural.count(d.canaryAnswered, "time"))")
        case DNSStatus.encryptedAllowed:
            lines.append("  encrypted DNS over TLS/QUIC (853) allowed (allow_encrypted_dns): domain rules miss what members resolve that way; Firefox's canary answered NXDOMAIN \(Plural.count(d.canaryAnswered, "time"))")
        default:
            break
        }
        if d.sharedAddresses > 0 {
            var line = "  shared    \(Plural.count(d.sharedAddresses, "address", "addresses")) answered for a bypassed name and another stayed in the tunnel"
            if !d.sharedNow.isEmpty {
                line += "; now: " + d.sharedNow.map { "\($0.address) (\($0.bypassed) with \($0.tunneled), \($0.secondsLeft) s)" }.joined(separator: ", ")
            }
            lines.append(line)
        }
        return lines
    }

    /// Members' lookups through systemd-resolved (nss-resolve) and nscd: answered through the
    /// proxy, or said to leave where the kernel cannot send them there.
    static func names(_ d: DNSStatus) -> [String] {
        guard let names = d.names else { return [] }
        if let failure = names.failure {
            return ["  names     lookups through systemd-resolved and nscd are NOT followed on this host (\(failure)): they leave outside the profile; "
                + "take resolve off /etc/nsswitch.conf's hosts line (hosts: files dns) and stop nscd, or use Linux 6.7 or later"]
        }
        return ["  names     lookups through systemd-resolved answered here: \(Plural.count(names.calls, "call")), \(names.errors) with an error; nscd refused \(Plural.count(names.nscdRefused, "time"))"]
    }
}
