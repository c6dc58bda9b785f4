/// Monotonic time as the I/O edge reads it (CLOCK_MONOTONIC in nanoseconds); the proxy never
/// reads a clock, so tests drive it with a fake one.
public struct DNSInstant: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (a: DNSInstant, b: DNSInstant) -> Bool { a.nanoseconds < b.nanoseconds }

    public static func + (instant: DNSInstant, duration: Duration) -> DNSInstant {
        DNSInstant(nanoseconds: instant.nanoseconds &+ duration.nanoseconds)
    }
}

extension Duration {
    /// Whole nanoseconds, negative durations as zero.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}
