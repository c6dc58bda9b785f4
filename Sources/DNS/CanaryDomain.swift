import DomainNames

/// Firefox's canary, `use-application-dns.net`: before it turns DNS over HTTPS on by
/// default, Firefox resolves this name through the system's resolver and leaves DoH off if
/// the answer is NXDOMAIN, has no addresses, or only local ones (DoHHeuristics'
/// `globalCanary`; it asks for the name itself, A only, and only once firefox.com and
/// mozilla.org resolve). A proxy with domain lists answers NXDOMAIN itself: with DoH on,
/// Firefox's lookups never reach the proxy and the lists do nothing. Names below the canary
/// get NXDOMAIN too, as a resolver that honours NXDOMAIN cuts (RFC 8020) would say.
/// It is a default, not a lock: a user's or an enterprise policy's explicit DoH wins.
enum CanaryDomain {
    static let name = "use-application-dns.net"
    private static let patterns = DomainList([[try! DomainPattern(name), try! DomainPattern("*." + name)]])

    /// Whether the query's (one, already checked) question is the canary or below it.
    static func isAsked(in query: [UInt8]) -> Bool {
        guard let (question, _) = try? MessageWalker.question(query, at: DNSHeader.size) else { return false }
        return !((try? patterns.lists(matchingNameAt: question.name, in: query)) ?? []).isEmpty
    }
}
