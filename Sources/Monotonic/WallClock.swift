import Glibc

/// Calendar time (CLOCK_REALTIME), for what is shown or sent as a date: WireGuard's TAI64N
/// timestamps, "latest handshake", the since of a status. Durations are measured on the
/// monotonic clock, which the calendar's steps do not move; this is its one reader.
public struct WallClock: Hashable, Sendable {
    public var seconds: Int64
    public var nanoseconds: Int32

    public init(seconds: Int64, nanoseconds: Int32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    public static func now() -> WallClock {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return WallClock(seconds: Int64(ts.tv_sec), nanoseconds: Int32(ts.tv_nsec))
    }

    /// Seconds since the epoch, as status and JSON give times.
    public var secondsSinceEpoch: Double { Double(seconds) + Double(nanoseconds) / 1e9 }
}
