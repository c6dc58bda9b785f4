import Addresses

/// The address hints of an SVCB or HTTPS record (RFC 9460): `ipv4hint` (key 4) and
/// `ipv6hint` (key 6). Browsers that ask for HTTPS records may connect to a hint before
/// (or instead of) the A/AAAA answer, so a listed name's hints must be in its sets as its
/// addresses are.
enum ServiceHints {
    static let ipv4HintKey: UInt16 = 4
    static let ipv6HintKey: UInt16 = 6

    /// The hints in `data` (the record's RDATA in `bytes`). An AliasMode record (priority 0)
    /// has none. A malformed record gives none: RFC 9460 has clients discard it, so no
    /// connection can follow its hints.
    static func addresses(_ bytes: [UInt8], _ data: Range<Int>) -> [IPAddress] {
        (try? read(bytes, data)) ?? []
    }

    /// Where the record's TargetName starts in `bytes`, unless it is the root ("." : the
    /// owner itself in ServiceMode, no service in AliasMode) or the record is malformed.
    static func targetName(_ bytes: [UInt8], _ data: Range<Int>) -> Int? {
        guard data.count >= 3, data.upperBound <= bytes.count, bytes[data.lowerBound + 2] != 0,
              (try? read(bytes, data)) != nil else { return nil }
        return data.lowerBound + 2
    }

    private struct Malformed: Error {}

    /// Where the parameters start, after a TargetName that lies within the record.
    private static func parameters(_ bytes: [UInt8], _ data: Range<Int>) throws(Malformed) -> Int {
        let end = data.upperBound
        guard data.count >= 3, end <= bytes.count else { throw Malformed() }
        // TargetName: never compressed (RFC 9460 2.2).
        var at = data.lowerBound + 2
        while true {
            guard at < end else { throw Malformed() }
            let length = Int(bytes[at])
            at += 1
            if length == 0 { return at }
            guard length < 64, at + length <= end else { throw Malformed() }
            at += length
        }
    }

    private static func read(_ bytes: [UInt8], _ data: Range<Int>) throws(Malformed) -> [IPAddress] {
        let end = data.upperBound
        var at = try parameters(bytes, data)
        let priority = UInt16(bytes[data.lowerBound]) << 8 | UInt16(bytes[data.lowerBound + 1])
        guard priority != 0 else { return [] }
        var hints: [IPAddress] = []
        var previousKey: Int = -1
        while at < end {
            guard at + 4 <= end else { throw Malformed() }
            let key = UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
            let length = Int(UInt16(bytes[at + 2]) << 8 | UInt16(bytes[at + 3]))
            at += 4
            // Keys strictly increasing, each value within the record.
            guard Int(key) > previousKey, at + length <= end else { throw Malformed() }
            previousKey = Int(key)
            let size = key == ipv4HintKey ? 4 : key == ipv6HintKey ? 16 : 0
            if size > 0 {
                guard length > 0, length % size == 0 else { throw Malformed() }
                for start in stride(from: at, to: at + length, by: size) {
                    hints.append(Wire.address(bytes, start..<(start + size)))
                }
            }
            at += length
        }
        return hints
    }
}
