/// Damages valid documents in the ways that exercise error paths: bytes
/// that matter to the grammar inserted, replaced or deleted, lines repeated
/// (duplicate keys and tables), truncation, and invalid UTF-8.
struct Mutator {
    var rng: SplitMix64

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
    }

    private static let bytes: [UInt8] = Array("[]{},=.\"'\\#\n\r\t 019aefxob_-+:TZz".utf8) + [0x00, 0x08, 0x1F, 0x7F, 0x80, 0xC3, 0xE2, 0xED, 0xF4, 0xFF]
    private static let snippets = ["\"\"\"", "'''", "[a]", "[[a]]", "a.b = 1", "a = 1", "= ", "\\u", "\\U0000D800", "\\", "1979-05-27", "T07:32:00",
                                   "0x", "inf", "{", "}", ",\n", "\r\n", "\n[", "#", "\u{FEFF}", "é", "\"", "[[", "]]", "x = {", "x = [", ".", "1e", "_"]

    private mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }

    private static let significant = Set(Array("[]{},=.\"'\\#\n\r:+-_".utf8))

    /// Half of the time next to a byte that matters to the grammar (just
    /// after a '#', just before a quote...), where damage is most telling.
    private mutating func pickPosition(in bytes: [UInt8]) -> Int {
        if !bytes.isEmpty && int(0...1) == 0 {
            for _ in 0..<8 {
                let index = int(0...(bytes.count - 1))
                if Self.significant.contains(bytes[index]) {
                    return min(bytes.count, max(0, index + int(-1...1)))
                }
            }
        }
        return int(0...bytes.count)
    }

    mutating func mutate(_ document: [UInt8]) -> [UInt8] {
        var bytes = document
        for _ in 0..<int(1...3) {
            let position = pickPosition(in: bytes)
            switch int(0...7) {
            case 0 where !bytes.isEmpty:
                let start = min(position, bytes.count - 1)
                bytes.removeSubrange(start..<min(bytes.count, start + int(1...4)))
            case 1:
                bytes.insert(Self.bytes[int(0...(Self.bytes.count - 1))], at: position)
            case 2 where !bytes.isEmpty:
                bytes[min(position, bytes.count - 1)] = Self.bytes[int(0...(Self.bytes.count - 1))]
            case 3, 4:
                var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
                guard !lines.isEmpty else { continue }
                let from = int(0...(lines.count - 1))
                let line = lines[from]
                if int(0...1) == 0 {
                    lines.insert(line, at: int(0...lines.count))
                } else {
                    lines.remove(at: from)
                    lines.insert(line, at: int(0...lines.count))
                }
                bytes = Array(lines.joined(separator: [0x0A]))
            case 5:
                bytes.removeSubrange(position..<bytes.count)
            default:
                bytes.insert(contentsOf: Array(Self.snippets[int(0...(Self.snippets.count - 1))].utf8), at: position)
            }
        }
        return bytes
    }
}
