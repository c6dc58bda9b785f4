import Glibc

/// A point on the monotonic clock (CLOCK_MONOTONIC) in nanoseconds: what the WireGuard
/// timers, the tunnels' demand machine and the DNS proxy measure time with. The pure cores
/// never read it; they are fed an instant (`now:`), so tests drive them with a fake one.
/// Spans between instants are Swift's `Duration`.
public struct MonotonicInstant: Comparable, Hashable, Sendable {
    public typealias Duration = Swift.Duration

    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The clock now: the one place the monotonic clock is read for these modules.
    @inline(__always)
    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    /// An instant `s` seconds after the clock's origin (tests start their fake clocks so).
    public static func seconds(_ s: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: UInt64(s * 1e9)) }

    public static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.nanoseconds < b.nanoseconds }

    /// Later by `duration` (a negative one moves nothing).
    @inline(__always)
    public static func + (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: instant.nanoseconds &+ duration.nanoseconds)
    }

    /// The time from `earlier` to this instant; zero when `earlier` is not earlier.
    @inline(__always)
    public func since(_ earlier: MonotonicInstant) -> Duration {
        Duration(nanoseconds: nanoseconds &- min(earlier.nanoseconds, nanoseconds))
    }
}

extension Duration {
    /// Whole nanoseconds; negative durations count as zero (a deadline already passed).
    @inline(__always)
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }

    @inline(__always)
    public init(nanoseconds: UInt64) {
        self = .nanoseconds(Int64(clamping: nanoseconds))
    }
}
