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
}
