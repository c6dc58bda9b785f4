import CSodium

/// Monotonic time in nanoseconds, as the I/O edge reads it; the protocol never reads a clock.
public struct Timestamp: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: Timestamp, d: Duration) -> Timestamp { Timestamp(nanoseconds: a.nanoseconds &+ d.nanoseconds) }
    public func since(_ earlier: Timestamp) -> Duration { Duration(nanoseconds: nanoseconds &- min(earlier.nanoseconds, nanoseconds)) }
    public static func seconds(_ s: Double) -> Timestamp { Timestamp(nanoseconds: UInt64(s * 1e9)) }

    public struct Duration: Comparable, Hashable, Sendable {
        public var nanoseconds: UInt64
        public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
        public static func seconds(_ s: Double) -> Duration { Duration(nanoseconds: UInt64(s * 1e9)) }
        public static func milliseconds(_ ms: UInt64) -> Duration { Duration(nanoseconds: ms * 1_000_000) }
        public static func < (a: Duration, b: Duration) -> Bool { a.nanoseconds < b.nanoseconds }
        public static func + (a: Duration, b: Duration) -> Duration { Duration(nanoseconds: a.nanoseconds + b.nanoseconds) }
        public static func * (a: Duration, n: UInt64) -> Duration { Duration(nanoseconds: a.nanoseconds * n) }
    }
}

/// Calendar time, for TAI64N and "latest handshake".
public struct WallClock: Hashable, Sendable {
    public var seconds: Int64
    public var nanoseconds: Int32
    public init(seconds: Int64, nanoseconds: Int32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
}

/// Randomness for ephemeral keys, indices, cookie secrets and jitter; tests inject a seeded one.
public protocol RandomSource: Sendable {
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

public struct SystemRandom: RandomSource {
    public init() { _ = Sodium.ready }
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        randombytes_buf(base, buffer.count)
    }
}

extension RandomSource {
    func bytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }

    func uint32() -> UInt32 {
        var v: UInt32 = 0
        withUnsafeMutableBytes(of: &v) { fill($0) }
        return v
    }
}
