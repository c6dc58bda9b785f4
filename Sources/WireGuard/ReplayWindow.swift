/// The sliding window of received transport counters (RFC 6479's layout: a ring of 64-bit
/// blocks, 2048 bits, of which 1984 are the window), so reordered packets pass and
/// repeated ones do not.
struct ReplayWindow {
    static let blocks = 32
    static let windowSize: UInt64 = UInt64(blocks - 1) * 64

    private var last: UInt64 = 0
    private var ring: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                       UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                       UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                       UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// True (and remembered) the first time `counter` is seen within the window.
    mutating func accept(_ counter: UInt64, limit: UInt64) -> Bool {
        guard counter < limit else { return false }
        let block = counter >> 6
        return withUnsafeMutableBytes(of: &ring) { raw in
            let words = raw.bindMemory(to: UInt64.self)
            if counter > last {
                let current = last >> 6
                let advance = min(block - current, UInt64(Self.blocks))
                var i: UInt64 = 1
                while i <= advance {
                    words[Int((current + i) & UInt64(Self.blocks - 1))] = 0
                    i += 1
                }
                last = counter
            } else if last - counter > Self.windowSize {
                return false
            }
            let index = Int(block & UInt64(Self.blocks - 1))
            let bit = UInt64(1) << (counter & 63)
            if words[index] & bit != 0 { return false }
            words[index] |= bit
            return true
        }
    }
}
