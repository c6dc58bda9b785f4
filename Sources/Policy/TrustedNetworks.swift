/// `trusted = [...]`: what a profile does on the networks the host is on. Rules are tried
/// in order, the first whose every field matches decides; with none matching the profile
/// connects. No field is authentication (docs/design.md, "Trusted networks"): each says
/// what the network told the host, and a hostile network can tell it many of them.
public struct TrustedRule: Hashable, Sendable {
    public var match: TrustedMatch
    public var action: TrustedAction
    /// Where the rule was written (its `{` or `[[...]]`).
    public var location: SourceLocation

    public init(match: TrustedMatch, action: TrustedAction, location: SourceLocation) {
        self.match = match
        self.action = action
        self.location = location
    }
}

/// The fields of one rule; nil fields are not compared, at least one is set.
public struct TrustedMatch: Hashable, Sendable {
    /// The default route's interface: a name ("eth0") or a prefix ending in "*" ("wl*").
    public var interface: String?
    /// The link-layer address of the default route's gateway, lower case "aa:bb:cc:dd:ee:ff".
    public var gatewayMAC: String?
    /// A DNS search domain the host was given (resolv.conf `search`/`domain`), lower case,
    /// without a trailing dot.
    public var searchDomain: String?
    /// The Wi-Fi network name of the default route's interface, as nl80211 reports it.
    public var ssid: String?

    public init(interface: String? = nil, gatewayMAC: String? = nil, searchDomain: String? = nil, ssid: String? = nil) {
        self.interface = interface
        self.gatewayMAC = gatewayMAC
        self.searchDomain = searchDomain
        self.ssid = ssid
    }

    public var isEmpty: Bool { interface == nil && gatewayMAC == nil && searchDomain == nil && ssid == nil }

    /// The policy keys, in the order messages list them.
    public static let keys = ["interface", "gateway_mac", "search_domain", "ssid"]
}

public enum TrustedAction: String, Hashable, Sendable, CaseIterable, Codable {
    /// The tunnel is used as normal.
    case connect
    /// The whole profile steps aside: members and route lists go direct, no killswitch,
    /// no DNS proxy; a built-in tunnel stops.
    case disconnect
    /// Members are held: nothing of theirs goes through the tunnel or direct (the
    /// profile's declared exceptions still apply); a built-in tunnel stops.
    case block
}

extension TrustedMatch {
    /// "aa:bb:cc:dd:ee:ff" (or with '-'), any case -> lower case with ':'; nil if not six bytes.
    public static func normalizedMAC(_ text: String) -> String? {
        let parts = text.split(separator: text.contains("-") ? "-" : ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else { return nil }
        return parts.map { $0.lowercased() }.joined(separator: ":")
    }

    /// Lower case, without the trailing dot: how search domains compare.
    public static func normalizedDomain(_ text: String) -> String {
        var domain = text.lowercased()
        while domain.hasSuffix(".") { domain.removeLast() }
        return domain
    }
}
