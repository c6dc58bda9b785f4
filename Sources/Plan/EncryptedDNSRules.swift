import Policy

/// Encrypted DNS from members where domain rules apply to them. The profile's proxy fills
/// the domain sets from the port-53 queries it answers; a member that resolves over TLS
/// (DoT, TCP 853) or QUIC (DoQ, UDP 853) asks someone else, the sets stay empty, and
/// bypass.domains and route.domains silently do nothing. So, unless the profile says
/// `allow_encrypted_dns = true`, the member's sockets are refused port 853 to any address
/// where they connect or send (the socket programs: connect() fails with EPERM; an
/// unconnected UDP send meets a `prohibit` rule, DNSRouting: EACCES), so the
/// client fails at once (and falls back to port 53 where it can) instead of
/// timing out, and nothing leaves. DNS over HTTPS (443) looks like any other HTTPS and is
/// not refused here; the proxy answers Firefox's canary (DNSProxy) and the README tells how
/// to turn an application's own DoH off.
enum EncryptedDNSRules {
    static let port: UInt16 = 853

    /// Whether the profile's proxy fills any set: its own bypass.domains, or any profile's
    /// route.domains (every proxy learns those).
    static func hasDomainRules(_ profile: Profile, in policy: Policy) -> Bool {
        !profile.bypassDomains.isEmpty || policy.profiles.contains { !$0.routeDomains.isEmpty }
    }

    static func refuses(_ profile: Profile, in policy: Policy) -> Bool {
        !profile.allowEncryptedDNS && hasDomainRules(profile, in: policy)
    }
}

extension Policy {
    /// How the profile's members' DNS over TLS/QUIC is treated, as the status says it:
    /// "refused", "allowed" (allow_encrypted_dns), or "no-domain-rules".
    public func encryptedDNS(of profile: Profile) -> String {
        guard EncryptedDNSRules.hasDomainRules(profile, in: self) else { return "no-domain-rules" }
        return profile.allowEncryptedDNS ? "allowed" : "refused"
    }
}
