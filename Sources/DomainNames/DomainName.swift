/// A domain name as a value: its labels in uncompressed wire form (length-prefixed, ending
/// with the root's zero byte), case kept as received so an answer can echo it (resolvers
/// that randomise case expect that), compared and hashed without regard to ASCII case.
public struct DomainName: Hashable, Sendable, CustomStringConvertible {
    /// Uncompressed wire form, at most 255 bytes.
    public let wire: [UInt8]

    public static let root = DomainName(uncheckedWire: [0])

    /// The most a name takes in wire form (RFC 1035 2.3.4).
    public static let maxWireLength = 255

    /// For wire bytes already checked, as a message's names are when they are read.
    package init(uncheckedWire: [UInt8]) { wire = uncheckedWire }

    /// From wire-form labels (each 1...63 bytes, 255 bytes in all).
    public init?(labels: [[UInt8]]) {
        var wire: [UInt8] = []
        for label in labels {
            guard (1...63).contains(label.count) else { return nil }
            wire.append(UInt8(label.count))
            wire += label
        }
        wire.append(0)
        guard wire.count <= Self.maxWireLength else { return nil }
        self.wire = wire
    }

    /// Presentation format ("www.example.com", trailing dot optional, "\." and "\DDD"
    /// escapes as RFC 1035 5.1 writes them); nil for empty labels or a name too long.
    public init?(_ text: some StringProtocol) {
        guard text != ".", !text.isEmpty else {
            if text == "." { self = .root; return }
            return nil
        }
        var labels: [[UInt8]] = [[]]
        var bytes = Array(text.utf8)[...]
        if bytes.last == UInt8(ascii: "."), !Self.endsWithEscapedDot(bytes) { bytes = bytes.dropLast() }
        while let byte = bytes.popFirst() {
            switch byte {
            case UInt8(ascii: "."):
                labels.append([])
            case UInt8(ascii: "\\"):
                guard let first = bytes.popFirst() else { return nil }
                if Self.isDigit(first) {
                    guard let second = bytes.popFirst(), let third = bytes.popFirst(), Self.isDigit(second), Self.isDigit(third) else { return nil }
                    let value = Int(first - 48) * 100 + Int(second - 48) * 10 + Int(third - 48)
                    guard value <= 255 else { return nil }
                    labels[labels.count - 1].append(UInt8(value))
                } else {
                    labels[labels.count - 1].append(first)
                }
            default:
                labels[labels.count - 1].append(byte)
            }
        }
        self.init(labels: labels)
    }

    public var labels: [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var at = 0
        while wire[at] != 0 {
            let length = Int(wire[at])
            result.append(wire[(at + 1)...(at + length)])
            at += 1 + length
        }
        return result
    }

    public var isRoot: Bool { wire.count == 1 }

    /// The same name in lower case (ASCII only).
    public var lowercased: DomainName { DomainName(uncheckedWire: wire.map(ASCIICase.lower)) }

    public static func == (a: DomainName, b: DomainName) -> Bool {
        a.wire.count == b.wire.count && zip(a.wire, b.wire).allSatisfy { ASCIICase.lower($0) == ASCIICase.lower($1) }
    }

    public func hash(into hasher: inout Hasher) {
        for byte in wire { hasher.combine(ASCIICase.lower(byte)) }
    }

    /// With a trailing dot; bytes outside printable ASCII as \DDD, and the characters that
    /// mean something in a zone file escaped with a backslash.
    public var description: String {
        guard !isRoot else { return "." }
        var text = ""
        for label in labels {
            for byte in label {
                switch byte {
                case UInt8(ascii: "."), UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "("), UInt8(ascii: ")"),
                     UInt8(ascii: ";"), UInt8(ascii: "@"), UInt8(ascii: "$"):
                    text += "\\" + String(UnicodeScalar(byte))
                case 0x21...0x7e:
                    text.unicodeScalars.append(UnicodeScalar(byte))
                default:
                    let digits = String(byte)
                    text += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
                }
            }
            text += "."
        }
        return text
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (48...57).contains(byte) }

    /// "a\." ends in an escaped dot that belongs to the label, not a trailing separator.
    private static func endsWithEscapedDot(_ bytes: ArraySlice<UInt8>) -> Bool {
        var backslashes = 0
        var index = bytes.index(before: bytes.endIndex)
        while index > bytes.startIndex, bytes[bytes.index(before: index)] == UInt8(ascii: "\\") {
            backslashes += 1
            index = bytes.index(before: index)
        }
        return backslashes % 2 == 1
    }
}
