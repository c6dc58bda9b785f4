/// An IPv4 or IPv6 address as a value, parsed and printed in the usual notations
/// (dotted quad; RFC 5952 for IPv6), with the bytes in network order.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible, Comparable {
    case v4(UInt32)
    case v6(UInt64, UInt64)

    public init?(_ text: some StringProtocol) {
        if text.contains(":") {
            guard let (hi, lo) = Self.parseV6(Substring(text)) else { return nil }
            self = .v6(hi, lo)
        } else {
            guard let value = Self.parseV4(Substring(text)) else { return nil }
            self = .v4(value)
        }
    }

    /// From network-order bytes: 4 for IPv4, 16 for IPv6.
    public init?(bytes: some Collection<UInt8>) {
        let b = Array(bytes)
        switch b.count {
        case 4:
            self = .v4(b.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            let hi = b[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let lo = b[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self = .v6(hi, lo)
        default:
            return nil
        }
    }

    public var isIPv4: Bool { if case .v4 = self { return true } else { return false } }
    public var bitCount: Int { isIPv4 ? 32 : 128 }

    /// Network-order bytes.
    public var bytes: [UInt8] {
        switch self {
        case let .v4(v):
            return (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) }
        case let .v6(hi, lo):
            return (0..<8).map { UInt8(truncatingIfNeeded: hi >> (56 - 8 * $0)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: lo >> (56 - 8 * $0)) }
        }
    }

    public var description: String {
        switch self {
        case let .v4(v):
            return (0..<4).map { String((v >> (24 - 8 * $0)) & 0xff) }.joined(separator: ".")
        case let .v6(hi, lo):
            let groups = (0..<4).map { UInt16(truncatingIfNeeded: hi >> (48 - 16 * $0)) }
                + (0..<4).map { UInt16(truncatingIfNeeded: lo >> (48 - 16 * $0)) }
            return Self.formatV6(groups)
        }
    }

    public static func < (a: IPAddress, b: IPAddress) -> Bool {
        switch (a, b) {
        case let (.v4(x), .v4(y)): return x < y
        case let (.v6(xh, xl), .v6(yh, yl)): return (xh, xl) < (yh, yl)
        case (.v4, .v6): return true
        case (.v6, .v4): return false
        }
    }

    static func parseV4(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            // Leading zeros are refused: "010" is octal to inet_aton and decimal to others.
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCIIDigit),
                  part == "0" || part.first != "0", let octet = UInt32(part), octet <= 255
            else { return nil }
            value = value << 8 | octet
        }
        return value
    }

    static func parseV6(_ text: Substring) -> (UInt64, UInt64)? {
        var groups: [UInt16] = []
        var gapIndex: Int?
        var rest = text
        if rest.hasPrefix("::") {
            gapIndex = 0
            rest = rest.dropFirst(2)
        }
        while !rest.isEmpty {
            let end = rest.firstIndex(of: ":") ?? rest.endIndex
            let piece = rest[rest.startIndex..<end]
            if piece.contains(".") {
                // An embedded IPv4 tail (::ffff:192.0.2.1) must be the last piece.
                guard end == rest.endIndex, let v4 = parseV4(piece) else { return nil }
                groups.append(UInt16(v4 >> 16))
                groups.append(UInt16(v4 & 0xffff))
                rest = rest[end...]
                break
            }
            guard (1...4).contains(piece.count), let group = UInt16(piece, radix: 16) else { return nil }
            groups.append(group)
            rest = rest[end...]
            if rest.hasPrefix("::") {
                guard gapIndex == nil else { return nil }
                gapIndex = groups.count
                rest = rest.dropFirst(2)
            } else if rest.hasPrefix(":") {
                rest = rest.dropFirst()
                guard !rest.isEmpty else { return nil }
            }
        }
        if let gap = gapIndex {
            guard groups.count <= 7 else { return nil }
            groups.insert(contentsOf: repeatElement(0, count: 8 - groups.count), at: gap)
        }
        guard groups.count == 8 else { return nil }
        let hi = groups[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        let lo = groups[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return (hi, lo)
    }

    /// RFC 5952: lower case, no leading zeros, the longest run (>= 2) of zero groups as "::".
    static func formatV6(_ groups: [UInt16]) -> String {
        var bestStart = -1, bestLength = 1
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            let start = index
            while index < 8 && groups[index] == 0 { index += 1 }
            if index - start > bestLength { bestStart = start; bestLength = index - start }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard bestStart >= 0 else { return hex.joined(separator: ":") }
        let head = hex[0..<bestStart].joined(separator: ":")
        let tail = hex[(bestStart + bestLength)...].joined(separator: ":")
        return head + "::" + tail
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
