/// What the host's networks say about where it is, as trusted-network rules compare it (read
/// by Facts.NetworkFactsReader, shown in `vpnctl status`). Nil or empty: not known (offline,
/// no gateway, no neighbour entry yet, not Wi-Fi); a rule that needs an unknown field does
/// not match.
public struct NetworkFacts: Codable, Hashable, Sendable {
    /// The interface of the main table's default route (IPv4's, else IPv6's).
    public var interface: String?
    /// Its gateway ("192.0.2.1", "fe80::1").
    public var gateway: String?
    /// The gateway's link-layer address from the neighbour table, "aa:bb:cc:dd:ee:ff".
    public var gatewayMAC: String?
    /// DNS search domains the host was given, lower case, without trailing dots.
    public var searchDomains: [String]
    /// The SSID the default route's interface is associated with (nl80211).
    public var ssid: String?

    public init(interface: String? = nil, gateway: String? = nil, gatewayMAC: String? = nil, searchDomains: [String] = [], ssid: String? = nil) {
        self.interface = interface
        self.gateway = gateway
        self.gatewayMAC = gatewayMAC
        self.searchDomains = searchDomains
        self.ssid = ssid
    }
}
