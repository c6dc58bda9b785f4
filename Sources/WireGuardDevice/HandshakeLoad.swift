import Synchronization

/// Counts handshake initiations per second, so a flood turns on cookie replies (the
/// mac2 check) without the engine needing a clock of its own.
final class HandshakeLoad: @unchecked Sendable {
    private let threshold: Int
    private let window = Mutex<(start: UInt64, count: Int, underLoadUntil: UInt64)>((0, 0, 0))

    init(threshold: Int) { self.threshold = threshold }

    func countInitiation(now: UInt64) -> Bool {
        window.withLock { w in
            if now &- w.start >= 1_000_000_000 { w = (now, 0, w.underLoadUntil) }
            w.count += 1
            // Once over the threshold, stay under load for a second: a flood must not toggle it per packet.
            if w.count > threshold { w.underLoadUntil = now + 1_000_000_000 }
            return now < w.underLoadUntil
        }
    }

    func isUnderLoad(now: UInt64) -> Bool { window.withLock { now < $0.underLoadUntil } }
}
