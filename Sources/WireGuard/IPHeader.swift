/// The IP header fields the engine needs, read from raw bytes with bounds checks.
enum IPHeader {
    /// Destination address bytes (4 or 16) of an IPv4 or IPv6 packet.
    @inline(__always)
    static func destination(_ p: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard !p.isEmpty else { return nil }
        switch p[0] >> 4 {
        case 4: return p.count >= 20 ? UnsafeRawBufferPointer(rebasing: p[16..<20]) : nil
        case 6: return p.count >= 40 ? UnsafeRawBufferPointer(rebasing: p[24..<40]) : nil
        default: return nil
        }
    }

    /// Source address bytes and the packet's own length (padding stripped), checked
    /// against what was received.
    @inline(__always)
    static func sourceAndLength(_ p: UnsafeRawBufferPointer) -> (UnsafeRawBufferPointer, Int)? {
        guard !p.isEmpty else { return nil }
        switch p[0] >> 4 {
        case 4:
            guard p.count >= 20 else { return nil }
            let length = Int(p[2]) << 8 | Int(p[3])
            guard length >= 20, length <= p.count else { return nil }
            return (UnsafeRawBufferPointer(rebasing: p[12..<16]), length)
        case 6:
            guard p.count >= 40 else { return nil }
            let length = 40 + (Int(p[4]) << 8 | Int(p[5]))
            guard length <= p.count else { return nil }
            return (UnsafeRawBufferPointer(rebasing: p[8..<24]), length)
        default:
            return nil
        }
    }
}
