/// A built-in tunnel's handshake retries, for `vpnctl status` and the metrics.
public struct ReconnectReport: Codable, Hashable, Sendable {
    /// The schedule in force.
    public var schedule: ReconnectScheduleStatus
    public var peers: [ReconnectPeerReport]

    public init(schedule: ReconnectScheduleStatus, peers: [ReconnectPeerReport]) {
        self.schedule = schedule
        self.peers = peers
    }
}

/// How a built-in tunnel spaces its handshake initiations when no answer comes.
public struct ReconnectScheduleStatus: Codable, Hashable, Sendable, CustomStringConvertible {
    /// WireGuard's own: every `minSeconds`, given up after `giveUpSeconds` until new traffic.
    public static let wireguard = "wireguard"
    /// `reconnect = { min, max }`: doubling from `minSeconds` to `maxSeconds`, never given up.
    public static let backoff = "backoff"

    /// `wireguard` or `backoff`.
    public var kind: String
    public var minSeconds: Double
    public var maxSeconds: Double
    /// Initiations allowed to a peer in any minute.
    public var stormLimitPerMinute: Int
    /// Retries stop after this long without an answer, until new traffic (nil: never).
    public var giveUpSeconds: Double?

    public init(kind: String, minSeconds: Double, maxSeconds: Double, stormLimitPerMinute: Int, giveUpSeconds: Double?) {
        self.kind = kind
        self.minSeconds = minSeconds
        self.maxSeconds = maxSeconds
        self.stormLimitPerMinute = stormLimitPerMinute
        self.giveUpSeconds = giveUpSeconds
    }

    /// "wireguard (every 5s for 90s)" or "backoff 5s..60s x2, at most 6/min".
    public var description: String {
        if kind == Self.wireguard {
            return "wireguard (every \(Self.seconds(minSeconds))\(giveUpSeconds.map { " for \(Self.seconds($0))" } ?? ""))"
        }
        return "backoff \(Self.seconds(minSeconds))..\(Self.seconds(maxSeconds)) x2, at most \(stormLimitPerMinute)/min"
    }

    static func seconds(_ s: Double) -> String { s == s.rounded() ? "\(Int(s))s" : "\(s)s" }
}

public struct ReconnectPeerReport: Codable, Hashable, Sendable {
    /// `lastError`'s values.
    public static let noResponse = "no-response", sendFailed = "send-failed", cookieRequired = "cookie-required", stormLimit = "storm-limit"

    public var publicKey: String
    /// Handshake initiations since the last completed handshake (or network change).
    public var attempts: UInt64
    /// Why the last initiation got no handshake: `no-response`, `send-failed` (the errno's
    /// words in `lastErrorDetail`), `cookie-required`, or `storm-limit` while the storm limit
    /// holds an initiation back.
    public var lastError: String?
    public var lastErrorDetail: String?
    /// Seconds from now to the next initiation; nil when none is due (up, or given up
    /// until new traffic).
    public var nextTry: Double?

    public init(publicKey: String, attempts: UInt64, lastError: String?, lastErrorDetail: String? = nil, nextTry: Double?) {
        self.publicKey = publicKey
        self.attempts = attempts
        self.lastError = lastError
        self.lastErrorDetail = lastErrorDetail
        self.nextTry = nextTry
    }

    /// "no response", "send failed: Network is unreachable", ...: as people read it.
    public var lastErrorText: String? {
        lastError.map { error in
            let words = String(error.map { $0 == "-" ? " " : $0 })
            return lastErrorDetail.map { "\(words): \($0)" } ?? words
        }
    }
}
