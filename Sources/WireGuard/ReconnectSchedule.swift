import Monotonic

/// How a peer's handshake initiations are spaced when no answer comes.
///
/// Without a `reconnect` policy the engine keeps WireGuard's own behaviour: a retry every
/// REKEY_TIMEOUT (5 s) plus up to 1/3 s of jitter, giving up after REKEY_ATTEMPT_TIME (90 s)
/// until new traffic asks again. With one, retries back off exponentially from `minimum`
/// to `maximum` and never give up. Whatever the policy, no initiation leaves sooner than
/// REKEY_TIMEOUT after the previous one (the protocol's floor), and at most `stormLimit`
/// leave in any `stormWindow`, whatever triggers them (retries, new data, a rekey, a
/// network change), so a loop of reconnections cannot drain a battery or hammer a server.
public struct ReconnectPolicy: Sendable, Hashable {
    /// The delay after the first unanswered initiation.
    public var minimum: MonotonicInstant.Duration
    /// The cap of the doubling delays.
    public var maximum: MonotonicInstant.Duration
    /// Initiations allowed per peer in any `stormWindow`.
    public var stormLimit: Int
    /// Retries stop after this many unanswered ones (until new traffic); nil never stops.
    public var maximumRetries: UInt64?
    /// True for WireGuard's own schedule (no `reconnect` policy).
    public var isProtocolDefault: Bool

    public static let stormWindow = MonotonicInstant.Duration.seconds(60)
    /// The storm limit with a `reconnect` policy: a retry, a network change and new data
    /// together still send at most this many initiations a minute.
    public static let backoffStormLimit = 6

    /// WireGuard's schedule for these protocol timings: REKEY_TIMEOUT between tries, the
    /// storm limit at the rate that spacing allows anyway (12 a minute), so it never binds.
    public static func protocolDefault(_ timing: Timing = .standard) -> ReconnectPolicy {
        let floor = max(timing.rekeyTimeout.nanoseconds, 1)
        return ReconnectPolicy(minimum: timing.rekeyTimeout, maximum: timing.rekeyTimeout,
                               stormLimit: Int((stormWindow.nanoseconds + floor - 1) / floor),
                               maximumRetries: timing.maxHandshakeAttempts, isProtocolDefault: true)
    }

    /// A `reconnect = { min, max }` policy; callers check `minimum >= REKEY_TIMEOUT` and
    /// `minimum <= maximum` (the policy parser does, with file:line).
    public static func backoff(minimum: MonotonicInstant.Duration, maximum: MonotonicInstant.Duration) -> ReconnectPolicy {
        ReconnectPolicy(minimum: minimum, maximum: maximum, stormLimit: backoffStormLimit, maximumRetries: nil, isProtocolDefault: false)
    }

    public init(minimum: MonotonicInstant.Duration, maximum: MonotonicInstant.Duration, stormLimit: Int, maximumRetries: UInt64?, isProtocolDefault: Bool) {
        self.minimum = minimum
        self.maximum = maximum
        self.stormLimit = max(stormLimit, 1)
        self.maximumRetries = maximumRetries
        self.isProtocolDefault = isProtocolDefault
    }

    /// "wireguard (every 5s, gives up after 90s)" or "backoff 5s..60s x2, at most 6/min".
    public var description: String {
        if isProtocolDefault {
            let giveUp = maximumRetries.map { " for \(Self.seconds(minimum * $0))" } ?? ""
            return "wireguard (every \(Self.seconds(minimum))\(giveUp))"
        }
        return "backoff \(Self.seconds(minimum))..\(Self.seconds(maximum)) x2, at most \(stormLimit)/min"
    }

    static func seconds(_ d: MonotonicInstant.Duration) -> String {
        let s = Double(d.nanoseconds) / 1e9
        return s == s.rounded() ? "\(Int(s))s" : "\(s)s"
    }
}

/// Why the last handshake attempt failed, for status.
public enum ReconnectError: Sendable, Hashable, CustomStringConvertible {
    /// The retry timer fired without a response.
    case noResponse
    /// The UDP send failed (the errno's text).
    case sendFailed(String)
    /// The server is under load and answered with a cookie; the next try carries it.
    case cookieRequired
    /// An initiation waits for the storm limit (one the floor alone delays is no error).
    case stormLimited

    public var description: String {
        switch self {
        case .noResponse: "no response"
        case let .sendFailed(text): "send failed: \(text)"
        case .cookieRequired: "cookie required"
        case .stormLimited: "storm limit"
        }
    }
}

/// One peer's reconnection state: a pure value fed with the engine's clock.
public struct ReconnectSchedule: Sendable {
    public private(set) var policy: ReconnectPolicy
    /// REKEY_TIMEOUT: the least time between two initiations.
    public let floor: MonotonicInstant.Duration
    /// Initiations since the last completed handshake (or network change).
    public private(set) var attempts: UInt64 = 0
    public var lastError: ReconnectError?
    /// When the last initiations left, oldest first (at most `stormLimit` of them).
    private var recent: [MonotonicInstant] = []
    /// A cookie reply answered the last initiation (the server lives but is under load).
    private var cookieForLast = false
    /// The last error before the storm limit held an initiation back: the last error again
    /// once that initiation leaves, since the storm limit then holds nothing.
    private var errorBeforeStormHold: ReconnectError?

    public init(policy: ReconnectPolicy, floor: MonotonicInstant.Duration) {
        self.policy = policy
        self.floor = floor
    }

    /// The wait after `n` unanswered initiations (n >= 1): minimum * 2^(n-1), capped at
    /// maximum, never under the floor.
    public func delay(after n: UInt64) -> MonotonicInstant.Duration {
        let doublings = min(n > 0 ? n - 1 : 0, 40)
        let grown = policy.minimum.nanoseconds.multipliedReportingOverflow(by: 1 << doublings)
        let capped = grown.overflow ? policy.maximum.nanoseconds : min(grown.partialValue, policy.maximum.nanoseconds)
        return MonotonicInstant.Duration(nanoseconds: max(capped, floor.nanoseconds))
    }

    /// What keeps an initiation from leaving at once.
    public enum Holdback: Sendable, Hashable {
        /// REKEY_TIMEOUT has not passed since the last one.
        case floor
        /// `stormLimit` initiations left in the last `stormWindow`, and the window frees a
        /// slot later than the floor would allow one.
        case stormLimit
    }

    /// When an initiation asked for at `now` may leave, and what holds it back until then;
    /// nil: it may leave now. Where the floor and the storm limit end at the same time the
    /// floor is named: without the storm limit it would wait as long (WireGuard's own
    /// schedule, 12 a minute, is spaced by the floor alone and never meets its limit).
    public func holdback(_ now: MonotonicInstant) -> (until: MonotonicInstant, by: Holdback)? {
        let floorEnds = recent.last.map { $0 + floor } ?? now
        let stormEnds = recent.count >= policy.stormLimit ? recent[recent.count - policy.stormLimit] + ReconnectPolicy.stormWindow : now
        if stormEnds > max(now, floorEnds) { return (stormEnds, .stormLimit) }
        return floorEnds > now ? (floorEnds, .floor) : nil
    }

    /// The earliest an initiation may leave: the floor after the last one and the storm limit.
    public func earliest(_ now: MonotonicInstant) -> MonotonicInstant { holdback(now)?.until ?? now }

    /// An initiation is asked for at `now`: nil when it may leave, else when it may. The
    /// storm limit becomes the last error while it is what holds the initiation back.
    public mutating func hold(_ now: MonotonicInstant) -> MonotonicInstant? {
        guard let held = holdback(now) else { return nil }
        if held.by == .stormLimit && lastError != .stormLimited {
            errorBeforeStormHold = lastError
            lastError = .stormLimited
        }
        return held.until
    }

    /// An initiation left at `now`; returns when to retry if nothing answers. The jitter is
    /// up to 1/15 of the delay (WireGuard's 1/3 s at 5 s), drawn from `random`.
    public mutating func initiated(_ now: MonotonicInstant, random: UInt32) -> MonotonicInstant {
        attempts += 1
        cookieForLast = false
        if lastError == .stormLimited { lastError = errorBeforeStormHold }
        errorBeforeStormHold = nil
        recent.append(now)
        if recent.count > policy.stormLimit { recent.removeFirst(recent.count - policy.stormLimit) }
        let wait = delay(after: attempts)
        let jitterSpan = wait.nanoseconds / 15 / 1_000_000 + 1
        return now + wait + .milliseconds(UInt64(random) % jitterSpan)
    }

    /// The retry timer fired with the last initiation unanswered.
    public mutating func unanswered() {
        if !cookieForLast { lastError = .noResponse }
    }

    /// The server answered the last initiation with a cookie reply.
    public mutating func cookieReceived() {
        cookieForLast = true
        lastError = .cookieRequired
    }

    /// A handshake completed: the next failure starts the schedule again.
    public mutating func succeeded() {
        attempts = 0
        lastError = nil
        errorBeforeStormHold = nil
    }

    /// The host's network changed: the backoff starts again (the storm window stays).
    public mutating func networkChanged() {
        attempts = 0
    }

    public mutating func setPolicy(_ policy: ReconnectPolicy) { self.policy = policy }
}
