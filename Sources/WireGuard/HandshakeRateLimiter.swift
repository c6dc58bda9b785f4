import Addresses
import Monotonic

/// Under load, a handshake message that carries a valid MAC2 proves its source address can
/// receive (it got a cookie there) but not that it is not flooding from it: each source
/// then gets a token bucket of 20 messages per second with a burst of 5, as wireguard-go's
/// rate limiter does, so one address cannot keep the responder busy with Diffie-Hellman.
/// IPv6 sources count per /64, since a host can pick any address in its prefix.
struct HandshakeRateLimiter {
    static let perSecond: UInt64 = 20
    static let burst: UInt64 = 5
    static let cost: UInt64 = 1_000_000_000 / perSecond
    static let maxTokens: UInt64 = cost * burst
    /// Idle buckets are forgotten after this (they would be full again anyway).
    static let idle: UInt64 = 1_000_000_000
    /// At most this many sources are tracked; beyond it new sources wait for a sweep.
    static let capacity = 65_536

    private struct Bucket {
        var tokens: UInt64
        var last: UInt64
    }

    private var buckets: [IPAddress: Bucket] = [:]
    private var lastSweep: UInt64 = 0

    var trackedSources: Int { buckets.count }

    /// Whether a handshake message from `source` may be processed now (and takes its token).
    mutating func allow(_ source: IPAddress, now: MonotonicInstant) -> Bool {
        let t = now.nanoseconds
        if t &- lastSweep >= Self.idle {
            buckets = buckets.filter { t &- $0.value.last < Self.idle }
            lastSweep = t
        }
        let key = Self.key(source)
        guard var bucket = buckets[key] else {
            guard buckets.count < Self.capacity else { return false }
            buckets[key] = Bucket(tokens: Self.maxTokens - Self.cost, last: t)
            return true
        }
        bucket.tokens = min(Self.maxTokens, bucket.tokens + (t &- min(bucket.last, t)))
        bucket.last = t
        let allowed = bucket.tokens >= Self.cost
        if allowed { bucket.tokens -= Self.cost }
        buckets[key] = bucket
        return allowed
    }

    static func key(_ address: IPAddress) -> IPAddress {
        if case let .v6(high, _) = address { return .v6(high, 0) }
        return address
    }
}
