import TOML

/// `[profile.X] reconnect = { min = "5s", max = "60s" }`: how a built-in tunnel retries its
/// handshakes when the server does not answer: the first retry after `min`, each next one
/// after twice the last, never more than `max` apart, never given up. Absent, the tunnel
/// keeps WireGuard's own schedule (a retry every 5 s, given up after 90 s until new traffic).
public struct Reconnect: Hashable, Sendable {
    public var minimum: Duration
    public var maximum: Duration
    public var location: SourceLocation

    public init(minimum: Duration, maximum: Duration, location: SourceLocation) {
        self.minimum = minimum
        self.maximum = maximum
        self.location = location
    }

    /// WireGuard's REKEY_TIMEOUT: no initiation may follow another sooner (the protocol's
    /// floor; a faster schedule would break it).
    public static let floor = Duration.seconds(5)
}

extension ProfileDraft {
    /// Reads `reconnect`; an error (file:line) for a malformed value, a minimum under the
    /// protocol's floor, a minimum above the maximum, or a tunnel vpnd does not run.
    static func readReconnect(_ reader: inout TableReader, tunnel: Tunnel?) -> Reconnect? {
        guard let table = reader.table("reconnect"), let keyAt = reader.keyLocation("reconnect") else { return nil }
        let context = "\(reader.context) reconnect"
        if let tunnel, !tunnel.isBuiltIn {
            reader.log.error("\(context) applies to built-in tunnels (tunnel.wireguard) only: vpnd does not run the handshakes of \(tunnel); remove it, or set the retries in the tool that runs that tunnel", at: keyAt)
            return nil
        }
        var inner = TableReader(table, file: reader.file, context: context, log: reader.log)
        defer { inner.reportUnknownKeys() }
        func duration(_ key: String) -> (Duration, SourceLocation)? {
            guard let (text, at) = inner.string(key) else {
                if inner.keyLocation(key) == nil {
                    inner.missing([key], "\(context) needs \(key) (a duration such as \"5s\" or \"1m\")", at: keyAt)
                }
                return nil
            }
            guard let value = Duration(parsing: text) else {
                reader.log.error("\(context) \(key) \"\(text)\" is not a duration: a whole number and a unit, ms, s, m, h or d (\"5s\", \"1m\")", at: at)
                return nil
            }
            return (value, at)
        }
        let min = duration("min"), max = duration("max")
        guard let (minimum, minimumAt) = min, let (maximum, maximumAt) = max else { return nil }
        if minimum.milliseconds < Reconnect.floor.milliseconds {
            reader.log.error("\(context) min \(minimum) is below WireGuard's REKEY_TIMEOUT (\(Reconnect.floor)): the protocol never sends initiations closer together; use min = \"\(Reconnect.floor)\" or more", at: minimumAt)
            return nil
        }
        if minimum.milliseconds > maximum.milliseconds {
            reader.log.error("\(context) min \(minimum) is above max \(maximum)", at: maximumAt)
            return nil
        }
        return Reconnect(minimum: minimum, maximum: maximum, location: keyAt)
    }
}
