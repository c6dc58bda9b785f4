import Control

/// Where members' queries arrive (DNSSteeringPoint), as `vpnctl status` shows it.
extension DNSSteeringStatus {
    /// Routed for the profiles `point` serves; to its IPv6 address too unless IPv6 is off on
    /// lo (`ipv6`: false, the facts' `loopbackIPv6`).
    public init(_ point: DNSSteeringPoint, ipv6: Bool) {
        self.init(profiles: point.served.count, ipv6: ipv6)
    }

    /// Queries routed to the steering addresses for `profiles` profiles; to the IPv6 one
    /// too unless `ipv6` is false, when members' IPv6 queries are refused.
    public init(profiles: Int, ipv6: Bool) {
        self.init(state: Self.routed,
                  addresses: [DNSSteeringPoint.address(ipv6: false).description] + (ipv6 ? [DNSSteeringPoint.address(ipv6: true).description] : []),
                  profiles: profiles, ipv6Refused: !ipv6)
    }

    /// No steering point: members' queries are refused on this host, and why.
    public init(failure: String) {
        self.init(state: Self.off, addresses: [], profiles: 0, failure: failure)
    }
}
