import CLinux
import Descriptors
import Glibc

/// The kernel's random numbers (getrandom), fetched 4 KiB at a time: the DNS proxy draws an
/// unpredictable ID for every query, and one system call per ID was a visible share of its
/// cost. The bytes are the kernel's CSPRNG output either way; only the batching differs.
struct KernelRandom: RandomNumberGenerator {
    private final class Pool {
        var words = [UInt64](repeating: 0, count: 512)
        var next = 512

        func refill() {
            var filled = 0
            let size = words.count * MemoryLayout<UInt64>.size
            words.withUnsafeMutableBytes { buffer in
                while filled < size {
                    let count = retryingInterrupted { vx_getrandom(buffer.baseAddress! + filled, size - filled) }
                    guard count >= 0 else { fatalError(SystemError("getrandom").description) }
                    filled += Int(count)
                }
            }
            next = 0
        }
    }

    private let pool = Pool()

    mutating func next() -> UInt64 {
        if pool.next == pool.words.count { pool.refill() }
        defer { pool.next += 1 }
        return pool.words[pool.next]
    }
}
