import Addresses
import DomainNames
import Monotonic

/// An upstream resolver, reached through the profile's tunnel.
public struct DNSServer: Hashable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16 = 53) {
        self.address = address
        self.port = port
    }

    public var description: String { address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)" }
}

/// One domain list of a profile (its bypass or its route-via-VPN domains) and the nft sets
/// its answers' addresses go to.
public struct DNSDomainSets: Hashable, Sendable {
    public var patterns: [DomainPattern]
    public var ipv4Set: String
    public var ipv6Set: String

    public init(patterns: [DomainPattern], ipv4Set: String, ipv6Set: String) {
        self.patterns = patterns
        self.ipv4Set = ipv4Set
        self.ipv6Set = ipv6Set
    }
}

/// For a profile with bypass.domains: where the addresses of answers for every name NOT in
/// its bypass list go (sets the ruleset checks before the bypass sets), so that an address
/// a bypassed name shares with another name stays in the tunnel, whichever was asked first.
public struct DNSTunneledSets: Hashable, Sendable {
    /// The index of the bypass list in `domainSets`.
    public var bypassList: Int
    public var ipv4Set: String
    public var ipv6Set: String

    public init(bypassList: Int, ipv4Set: String, ipv6Set: String) {
        self.bypassList = bypassList
        self.ipv4Set = ipv4Set
        self.ipv6Set = ipv6Set
    }
}

public struct DNSProxyConfiguration: Hashable, Sendable {
    /// Tried in turn: a query goes to the server that last answered in time, and to the
    /// next one each time `upstreamTimeout` passes without an answer.
    public var servers: [DNSServer]
    public var domainSets: [DNSDomainSets]
    /// A set element lives for its record's TTL held within these bounds (seconds): the
    /// floor lets a zero-TTL answer still cover the connection that follows it; the ceiling
    /// keeps an address that moved on from staying exempt for days. A relayed answer never
    /// promises a client more than the ceiling (its TTLs are lowered in place).
    public var elementTimeout: ClosedRange<UInt32>
    public var upstreamTimeout: Duration
    /// Queries waiting for an upstream; past it the oldest is answered SERVFAIL.
    public var maxInFlight: Int
    public var tunneledSets: DNSTunneledSets?

    public init(servers: [DNSServer], domainSets: [DNSDomainSets] = [], tunneledSets: DNSTunneledSets? = nil,
                elementTimeout: ClosedRange<UInt32> = 60...86_400, upstreamTimeout: Duration = .seconds(2), maxInFlight: Int = 4096) {
        self.servers = servers
        self.domainSets = domainSets
        self.tunneledSets = tunneledSets
        self.elementTimeout = elementTimeout
        self.upstreamTimeout = upstreamTimeout
        self.maxInFlight = maxInFlight
    }

    /// At most half the ID space in flight, so a random free ID is found in a few draws.
    public static let inFlightLimit = 32_768

    func validate() throws(DNSProxyConfigurationError) {
        guard domainSets.count <= DomainList.maxLists else { throw .init("at most \(DomainList.maxLists) domain lists, not \(domainSets.count)") }
        for sets in domainSets where sets.ipv4Set.isEmpty || sets.ipv6Set.isEmpty {
            throw .init("a domain list needs both an IPv4 and an IPv6 set name")
        }
        if let tunneledSets {
            guard domainSets.indices.contains(tunneledSets.bypassList) else { throw .init("the bypass list \(tunneledSets.bypassList) of the tunneled sets is not a domain list") }
            guard !tunneledSets.ipv4Set.isEmpty, !tunneledSets.ipv6Set.isEmpty else { throw .init("the tunneled sets need an IPv4 and an IPv6 set name") }
        }
        guard elementTimeout.lowerBound > 0 else { throw .init("the element timeout's floor must be at least 1 second") }
        guard upstreamTimeout > .zero else { throw .init("the upstream timeout must be positive") }
        guard (1...Self.inFlightLimit).contains(maxInFlight) else { throw .init("the in-flight limit must be 1 to \(Self.inFlightLimit), not \(maxInFlight)") }
    }
}

public struct DNSProxyConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
