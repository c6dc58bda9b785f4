/// A built-in tunnel's handshake retries, for `vpnctl status` and the metrics.
public struct ReconnectReport: Codable, Hashable, Sendable {
    /// The schedule in force: "wireguard (every 5s for 90s)" or "backoff 5s..60s x2, at most 6/min".
    public var schedule: String
    public var peers: [ReconnectPeerReport]

    public init(schedule: String, peers: [ReconnectPeerReport]) {
        self.schedule = schedule
        self.peers = peers
    }
}

public struct ReconnectPeerReport: Codable, Hashable, Sendable {
    public var publicKey: String
    /// Handshake initiations since the last completed handshake (or network change).
    public var attempts: UInt64
    /// "no response", "send failed: Network is unreachable", "cookie required", "storm limit".
    public var lastError: String?
    /// Seconds from now to the next initiation; nil when none is due (up, or given up
    /// until new traffic).
    public var nextTry: Double?

    public init(publicKey: String, attempts: UInt64, lastError: String?, nextTry: Double?) {
        self.publicKey = publicKey
        self.attempts = attempts
        self.lastError = lastError
        self.nextTry = nextTry
    }
}
