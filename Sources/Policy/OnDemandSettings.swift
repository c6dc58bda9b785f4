/// `on_demand` and `idle` of a profile with a built-in tunnel: the tunnel stays down (no
/// handshake, no keepalive, no packet to the server) until the first member or the first
/// packet for it, and with `idle` goes down again after that long with neither.
public struct OnDemandSettings: Hashable, Sendable {
    /// Down again after this long with no members and no traffic; nil: up until vpnd stops.
    public var idle: Duration?
    /// Where `on_demand` was written.
    public var location: SourceLocation

    public init(idle: Duration?, location: SourceLocation) {
        self.idle = idle
        self.location = location
    }
}

extension ProfileDraft {
    /// Reads `on_demand` and `idle`: only for a built-in tunnel (vpnd does not own another
    /// tunnel, so it cannot bring it up or down), `idle` only with `on_demand = true`.
    static func readOnDemand(_ reader: inout TableReader, tunnel: Tunnel?) -> OnDemandSettings? {
        let context = reader.context
        let onDemand = reader.bool("on_demand")
        let onDemandAt = reader.keyLocation("on_demand")
        var idle: Duration?
        if let (text, at) = reader.string("idle") {
            if let value = Duration(parsing: text), value.milliseconds >= 1000 {
                idle = value
            } else {
                reader.log.error("\(context) idle \"\(text)\" is not a duration of at least a second: a number and a unit, as in \"90s\", \"10m\" or \"1h\" (ms, s, m, h, d)", at: at)
            }
        }
        let idleAt = reader.keyLocation("idle")
        if let tunnel, !tunnel.isBuiltIn {
            for (key, at) in [("on_demand", onDemandAt), ("idle", idleAt)] {
                guard let at else { continue }
                reader.log.error("\(context) \(key) needs a built-in tunnel (tunnel.wireguard): vpnd does not own \(tunnel.interfaceName), so it cannot bring it up or down; whoever runs it decides", at: at)
            }
            return nil
        }
        if onDemand != true, let idleAt {
            reader.log.error("\(context) idle needs on_demand = true (a tunnel that is always up has no idle time)", at: idleAt)
            return nil
        }
        guard onDemand == true, let onDemandAt else { return nil }
        return OnDemandSettings(idle: idle, location: onDemandAt)
    }
}
