/// When a built-in tunnel runs (`on_demand`, `idle`, `vpnctl up/down`), in `vpnctl status`.
public struct TunnelDemandStatus: Codable, Hashable, Sendable {
    /// "down-on-demand", "down-held" (`vpnctl down`), "connecting" (no handshake completed
    /// since vpnd started or brought it up; traffic waits for one) or "up".
    public var state: String
    /// When it entered that state, in seconds since the epoch.
    public var since: Double
    /// Why: "vpnd started the tunnel", "a member appeared", "a packet was routed into the
    /// tunnel (to 192.0.2.80)", "idle: no members and no traffic", "vpnctl up", ...
    public var reason: String
    public var onDemand: Bool
    /// The `idle` setting, in seconds.
    public var idleSeconds: Double?
    /// Seconds left before the idle teardown, while it counts (no members, no `vpnctl up`).
    public var idleLeft: Double?
    /// "up" or "down" while a `vpnctl up` or `down` holds the tunnel (until a reload).
    public var held: String?

    public init(state: String, since: Double, reason: String, onDemand: Bool, idleSeconds: Double? = nil,
                idleLeft: Double? = nil, held: String? = nil) {
        self.state = state
        self.since = since
        self.reason = reason
        self.onDemand = onDemand
        self.idleSeconds = idleSeconds
        self.idleLeft = idleLeft
        self.held = held
    }
}
