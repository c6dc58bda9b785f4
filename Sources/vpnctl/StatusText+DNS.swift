import Control

extension StatusText {
    /// What would escape the profile's domain rules, and the addresses bypassed names share.
    static func encryptedAndShared(_ d: DNSStatus) -> [String] {
        var lines: [String] = []
        switch d.encryptedDNS {
        case DNSStatus.encryptedRefused:
            lines.append("  encrypted DNS over TLS/QUIC (853) refused: \(d.encryptedDNSRefused) time(s); Firefox's canary answered NXDOMAIN \(d.canaryAnswered) time(s)")
        case DNSStatus.encryptedAllowed:
            lines.append("  encrypted DNS over TLS/QUIC (853) allowed (allow_encrypted_dns): domain rules miss what members resolve that way; Firefox's canary answered NXDOMAIN \(d.canaryAnswered) time(s)")
        default:
            break
        }
        if d.sharedAddresses > 0 {
            var line = "  shared    \(d.sharedAddresses) address(es) answered for a bypassed name and another stayed in the tunnel"
            if !d.sharedNow.isEmpty {
                line += "; now: " + d.sharedNow.map { "\($0.address) (\($0.bypassed) with \($0.tunneled), \($0.secondsLeft) s)" }.joined(separator: ", ")
            }
            lines.append(line)
        }
        return lines
    }
}
