/// Seeded random TOML documents (valid by construction) and random edits of them.
struct DocumentGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed | 1
    }

    /// xorshift64*: deterministic across runs and platforms.
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    mutating func document() -> String {
        var lines: [String] = []
        var used = Set<String>()
        for _ in 0..<int(0...4) { lines.append(keyValue(&used, depth: 0)) }
        var tables = Set<String>()
        for _ in 0..<int(0...4) {
            var name = key()
            while tables.contains(name) || used.contains(name) { name = suffixed(name, "_" + String(int(0...9))) }
            tables.insert(name)
            if chance(30) {
                for _ in 0..<int(1...3) {
                    lines.append(blank() + "[[\(name)]]" + trailer())
                    var inner = Set<String>()
                    for _ in 0..<int(0...3) { lines.append(keyValue(&inner, depth: 0)) }
                }
            } else {
                let sub = chance(40) ? " . " + key() : ""
                lines.append(blank() + "[" + pick(["", " "]) + name + sub + pick(["", " "]) + "]" + trailer())
                var inner = Set<String>()
                for _ in 0..<int(0...4) { lines.append(keyValue(&inner, depth: 0)) }
            }
        }
        return lines.joined(separator: pick(["\n", "\r\n"])) + pick(["", "\n"])
    }

    mutating func blank() -> String { pick(["", "", "\n", "# note\n", "  \n"]) }
    mutating func trailer() -> String { pick(["", "", " # c", "\t"]) }

    mutating func key() -> String {
        pick(["a", "b", "key", "x-y", "_u", "n1", "Zed", "\"quoted key\"", "'lit'", "\"é\"", "\"\\u0041\"", "k2", "long_name_here"])
    }

    /// Appends to a key's name, inside the quotes of a quoted key.
    func suffixed(_ key: String, _ suffix: String) -> String {
        guard let quote = key.last, quote == "\"" || quote == "'" else { return key + suffix }
        return String(key.dropLast()) + suffix + String(quote)
    }

    /// `inline`: inside an inline table, where TOML 1.0 allows neither newlines nor comments.
    mutating func keyValue(_ used: inout Set<String>, depth: Int, inline: Bool = false) -> String {
        var name = key()
        while used.contains(name) { name = suffixed(name, String(int(0...9))) }
        used.insert(name)
        // Dotted keys under a fresh first part, so they never collide with other keys.
        let dotted = chance(20) ? name + pick([".", " . "]) + "d" + String(int(0...999)) : name
        return dotted + pick([" = ", "=", "\t=\t"]) + value(depth: depth, inline: inline) + (inline ? "" : trailer())
    }

    mutating func value(depth: Int, inline: Bool = false) -> String {
        let kinds = depth > 2 ? 7 : 9
        switch int(0...kinds) {
        case 0: return string(inline: inline)
        case 1: return integer()
        case 2: return float()
        case 3: return pick(["true", "false"])
        case 4: return dateTime()
        case 5: return string(inline: inline)
        case 6: return integer()
        case 7: return float()
        case 8:
            let items = (0..<int(0...4)).map { _ in value(depth: depth + 1, inline: inline) }
            let separator = inline ? pick([", ", ","]) : pick([", ", ",", ",\n  ", " , # c\n"])
            let open = inline ? pick(["", " "]) : pick(["", " ", "\n"])
            return "[" + open + items.joined(separator: separator) + (items.isEmpty ? "" : inline ? pick(["", ","]) : pick(["", ",", ",\n"])) + "]"
        default:
            var used = Set<String>()
            let items = (0..<int(0...3)).map { _ in keyValue(&used, depth: depth + 1, inline: true) }
            return "{" + (items.isEmpty ? pick(["", " "]) : " " + items.joined(separator: ", ") + " ") + "}"
        }
    }

    mutating func string(inline: Bool = false) -> String {
        switch int(0...(inline ? 2 : 5)) {
        case 0: return "\"plain \(int(0...99))\""
        case 1: return "\"esc \\t\\n\\\\ \\\" \\u00e9 \\U0001F600\""
        case 2: return "'lit \\ \(int(0...9))'"
        case 3: return "\"\"\"\nmulti \"quoted\"\n  line\\\n   folded\"\"\""
        case 4: return "'''\nraw ''\nlines'''"
        default: return "\"ünïcödé ✓\""
        }
    }

    mutating func integer() -> String {
        pick(["0", "-0", "+7", "42", "1_000_000", "-9223372036854775808", "9223372036854775807",
              "0xDEAD_beef", "0o755", "0b1010_1010", "0x0", "\(int(-99999...99999))"])
    }

    mutating func float() -> String {
        pick(["0.0", "-0.0", "3.14", "-2.5e-3", "1E6", "6.02e+23", "1_0.0_1", "inf", "-inf", "nan", "+nan", "1e-400", "5e+22", "\(int(-999...999)).\(int(0...999))"])
    }

    mutating func dateTime() -> String {
        pick(["1979-05-27T07:32:00Z", "1979-05-27T00:32:00.999999-07:00", "2024-02-29 23:59:59", "1979-05-27",
              "07:32:00", "00:00:00.000001", "1999-12-31t23:59:59.5z", "2000-01-01T00:00:00+14:00"])
    }

    /// 1 to 3 random edits with characters that matter to TOML.
    mutating func mutate(_ text: String) -> String {
        var characters = Array(text)
        let pieces: [Character] = ["[", "]", "=", "\"", "'", ".", ",", "{", "}", "\n", "#", " ", "\\", "0", "_", "e", "\r", ":", "-", "+", "t", "\t", "\u{7F}"]
        for _ in 0..<int(1...3) {
            let position = characters.isEmpty ? 0 : int(0...(characters.count - 1))
            switch int(0...3) {
            case 0 where !characters.isEmpty:
                characters.remove(at: position)
            case 1 where !characters.isEmpty:
                characters[position] = pick(pieces)
            case 2 where characters.count > 2:
                let end = min(characters.count, position + int(1...8))
                characters.insert(contentsOf: characters[position..<end], at: position)
            default:
                characters.insert(pick(pieces), at: position)
            }
        }
        return String(characters)
    }
}
