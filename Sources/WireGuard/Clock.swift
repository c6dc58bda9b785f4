import CSodium
// Monotonic time (`MonotonicInstant`) and calendar time (`WallClock`) as the I/O edge reads
// them; the protocol never reads a clock.
import Monotonic

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
