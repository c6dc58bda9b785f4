/// Why the proxy dropped a message without replying.
public enum DNSDropReason: String, CaseIterable, Hashable, Sendable {
    /// A client sent fewer bytes than a header: there is nothing to reply to.
    case unreadableQuery
    /// A client sent a response (QR set); answering it could loop between two resolvers.
    case responseFromClient
    /// An answer whose ID is not in flight, from a server the query was not sent to, or not
    /// a response: a late answer or a spoofing attempt.
    case unexpectedAnswer
    /// An answer whose ID is in flight but whose question differs: a spoofing attempt.
    case mismatchedAnswer
    /// An answer that matched but is not a well-formed message; the query stays in flight.
    case malformedAnswer
    /// A query routed from the profile's steering address without the profile's mark: a
    /// socket bound to that address by hand, which must not fill the profile's sets.
    case foreignQuery
}

public struct DNSProxyCounters: Hashable, Sendable {
    /// Upstream answers relayed to clients (after filling, where they filled).
    public internal(set) var answered: UInt64 = 0
    /// Queries sent upstream for the first time.
    public internal(set) var forwarded: UInt64 = 0
    /// Queries sent to another server after a timeout.
    public internal(set) var retried: UInt64 = 0
    /// Replies the proxy made itself: SERVFAIL, FORMERR, REFUSED, NOTIMP.
    public internal(set) var failed: UInt64 = 0
    /// Of `failed`: queries answered SERVFAIL because the in-flight table was full.
    public internal(set) var evicted: UInt64 = 0
    public internal(set) var dropped: [DNSDropReason: UInt64] = [:]
    /// Firefox's canary (`use-application-dns.net`) answered NXDOMAIN by the proxy itself
    /// (neither forwarded nor counted in `failed`).
    public internal(set) var canaryAnswered: UInt64 = 0
    /// Addresses answered for a bypassed name and, within both answers' lifetimes, for a
    /// name that is not bypassed (each such pair once; see `DNSSharedAddress`).
    public internal(set) var sharedAddresses: UInt64 = 0
    /// Elements handed out per set name.
    public internal(set) var addressesAdded: [String: UInt64] = [:]

    public var droppedTotal: UInt64 { dropped.values.reduce(0, +) }
}
