/// A small, fast, seedable generator so that every failure is reproducible
/// from the seed printed with it.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Writes random documents that are valid TOML 1.0 by construction: nested
/// and implicit tables, arrays of tables, dotted keys, every value type in
/// its various spellings, quoted keys and uneven whitespace. Key names are
/// made unique with a counter, so validity only depends on the structural
/// rules the generator follows on purpose.
struct DocumentGenerator {
    var rng: SplitMix64
    private var counter = 0
    private var newline = "\n"

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
    }

    // MARK: Randomness helpers

    private mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    private mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < probability }
    private mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    // MARK: Document structure

    mutating func document() -> [UInt8] {
        newline = chance(0.2) ? "\r\n" : "\n"
        var out = chance(0.05) ? "\u{FEFF}" : ""
        // Tables a header may name as a parent: the root, tables made by
        // headers (explicitly or implicitly), arrays of tables (meaning their
        // last element) and tables made by dotted keys.
        var headerParents: [[String]] = [[]]
        var implicitTables: [[String]] = []
        var arrayTables: [[String]] = []

        if chance(0.3) { out += comment() + newline }
        out += keyValues(count: int(0...4), section: [], headerParents: &headerParents)

        for _ in 0..<int(0...6) {
            out += blankLines()
            var header: String
            var section: [String]
            let choice = int(0...5)
            if choice == 0 && !implicitTables.isEmpty {
                section = implicitTables.remove(at: int(0...(implicitTables.count - 1)))
                header = "[" + renderHeaderKey(section) + "]"
            } else if choice <= 2 && !arrayTables.isEmpty && chance(0.6) {
                section = pick(arrayTables)
                // A new element: whatever was under the previous one is gone.
                let prefix = section
                let isUnder = { (path: [String]) -> Bool in path.count > prefix.count && Array(path.prefix(prefix.count)) == prefix }
                headerParents.removeAll(where: isUnder)
                implicitTables.removeAll(where: isUnder)
                arrayTables.removeAll(where: isUnder)
                header = "[[" + renderHeaderKey(section) + "]]"
            } else if choice <= 2 {
                section = pick(headerParents) + [freshName()]
                arrayTables.append(section)
                headerParents.append(section)
                header = "[[" + renderHeaderKey(section) + "]]"
            } else {
                let parent = pick(headerParents)
                let names = (0..<int(1...3)).map { _ in freshName() }
                for length in 1..<names.count {
                    let implicit = parent + names.prefix(length)
                    implicitTables.append(implicit)
                    headerParents.append(implicit)
                }
                section = parent + names
                headerParents.append(section)
                header = "[" + renderHeaderKey(section) + "]"
            }
            out += indentation() + header + lineEnd()
            out += keyValues(count: int(0...4), section: section, headerParents: &headerParents)
        }
        out += blankLines()
        if chance(0.3) {
            // The last line need not end with a newline.
            // "\r\n" is a single Character, so this drops either line ending.
            if out.hasSuffix(newline) { out.removeLast() }
        }
        return Array(out.utf8)
    }

    private mutating func keyValues(count: Int, section: [String], headerParents: inout [[String]]) -> String {
        var out = ""
        var remaining = count
        while remaining > 0 {
            if chance(0.2) { out += blankLines() }
            if chance(0.05) && remaining >= 2 {
                // Canonically equivalent but different keys are distinct in TOML.
                counter += 1
                out += indentation() + "\"\u{E9}\(counter)\"" + equals() + value(depth: 0) + lineEnd()
                out += indentation() + "\"e\u{301}\(counter)\"" + equals() + value(depth: 0) + lineEnd()
                remaining -= 2
            } else if chance(0.25) && remaining >= 2 {
                // Several keys sharing a dotted prefix build one table.
                let prefix = (0..<int(1...2)).map { _ in freshName() }
                for length in 1...prefix.count {
                    headerParents.append(section + prefix.prefix(length))
                }
                for _ in 0..<min(remaining, int(2...3)) {
                    out += indentation() + renderKey(prefix + [freshName()]) + equals() + value(depth: 0) + lineEnd()
                    remaining -= 1
                }
            } else {
                let key = (0..<(chance(0.2) ? int(2...3) : 1)).map { _ in freshName() }
                out += indentation() + renderKey(key) + equals() + value(depth: 0) + lineEnd()
                remaining -= 1
            }
        }
        return out
    }

    // MARK: Whitespace and comments

    private mutating func indentation() -> String { pick(["", "", "", "  ", "\t", "    "]) }
    private mutating func equals() -> String { pick([" = ", " = ", "=", "\t=\t", "  =  ", "= ", " ="]) }

    private mutating func comment() -> String {
        "#" + pick(["", " comment", " ünïcödé ✓", "\ttabbed # nested # marks", " \"quotes\" and 'apostrophes' = [x]"])
    }

    private mutating func lineEnd() -> String {
        (chance(0.2) ? pick([" ", "\t", "  "]) + comment() : pick(["", "", " ", "\t"])) + newline
    }

    private mutating func blankLines() -> String {
        var out = ""
        for _ in 0..<int(0...2) {
            out += pick(["", " ", "\t", comment(), "  " + comment()]) + newline
        }
        return out
    }

    // MARK: Keys

    private mutating func freshName() -> String {
        counter += 1
        let base = pick(["key", "a", "tunnel", "_x", "-", "12", "true", "inf", "nan", "Z",
                         "a b", "é", "a.b", "日本", "quote\"d", "tab\t", "#hash", "=", "[x]", "back\\slash", "it's", "🙂"])
        return base + String(counter)
    }

    private mutating func renderKey(_ names: [String]) -> String {
        names.map { renderKeyComponent($0) }.joined(separator: pick([".", ".", " . ", "\t.", ". "]))
    }

    private mutating func renderHeaderKey(_ names: [String]) -> String {
        let inner = renderKey(names)
        return chance(0.2) ? pick([" ", "\t"]) + inner + pick([" ", "\t"]) : inner
    }

    private mutating func renderKeyComponent(_ name: String) -> String {
        let bare = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x5F || byte == 0x2D
        }
        if bare && chance(0.7) { return name }
        let literalOK = !name.contains("'") && !name.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" }
        if literalOK && chance(0.4) { return "'" + name + "'" }
        return "\"" + escapeBasic(name) + "\""
    }

    /// Basic-string text for `text`, escaping what must be escaped and, at
    /// random, some characters that need not be.
    private mutating func escapeBasic(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\t": out += pick(["\\t", "\t", "\\u0009"])
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\u" + hex(scalar.value, width: 4)
            case _ where scalar.value > 0x7F && chance(0.3):
                out += scalar.value > 0xFFFF || chance(0.3) ? "\\U" + hex(scalar.value, width: 8) : "\\u" + hex(scalar.value, width: 4)
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private mutating func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: chance(0.5))
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    // MARK: Values

    private mutating func value(depth: Int) -> String {
        let composite = depth < 3
        switch int(0...(composite ? 9 : 7)) {
        case 0, 1: return stringValue()
        case 2: return integerValue()
        case 3: return floatValue()
        case 4: return pick(["true", "false"])
        case 5, 6: return dateTimeValue()
        case 7: return stringValue()
        case 8: return arrayValue(depth: depth + 1)
        default: return inlineTableValue(depth: depth + 1)
        }
    }

    private mutating func stringValue() -> String {
        switch int(0...5) {
        case 0, 1: return basicString()
        case 2: return literalString()
        case 3, 4: return multilineBasicString()
        default: return multilineLiteralString()
        }
    }

    private static let plainPieces = ["a", "Z", "0", " ", "vpn", "wg0", "é", "ß", "日本語", "🙂", "\u{7FF}", "\u{FFFF}", "\u{10000}", "#", "=", "[", "]", "{", "}", ",", ".", "'", "$", "~", "/", "\u{E000}"]

    private mutating func basicString() -> String {
        var out = "\""
        for _ in 0..<int(0...8) {
            if chance(0.25) {
                out += pick(["\\n", "\\t", "\\\"", "\\\\", "\\b", "\\f", "\\r", "\\u00E9", "\\u0000", "\\U0001F600", "\\u007f", "\\U0000FFFF", "\\U0010FFFF"])
            } else {
                out += escapeBasic(pick(Self.plainPieces + ["\"", "\\", "\t"]))
            }
        }
        return out + "\""
    }

    private mutating func literalString() -> String {
        var out = "'"
        for _ in 0..<int(0...8) {
            out += pick(Self.plainPieces.filter { $0 != "'" } + ["\"", "\\", "\\n", "\t", "C:\\Users"])
        }
        return out + "'"
    }

    private mutating func multilineBasicString() -> String {
        var out = "\"\"\"" + (chance(0.5) ? newline : "")
        var afterQuotes = false
        for _ in 0..<int(0...10) {
            switch int(0...6) {
            case 0:
                out += newline
                afterQuotes = false
            case 1 where !afterQuotes:
                out += pick(["\"", "\"\""])
                afterQuotes = true
                continue
            case 2:
                // Line-ending backslash: the line break and leading blanks vanish.
                out += "\\" + pick(["", " ", "\t "]) + newline + pick(["", "  ", newline + "\t"])
            case 3:
                out += pick(["\\n", "\\t", "\\\"", "\\\\", "\\u00E9", "\\U0001F600", "\\r"])
            default:
                out += escapeBasic(pick(Self.plainPieces))
            }
            afterQuotes = false
        }
        if !afterQuotes && chance(0.2) { out += pick(["\"", "\"\""]) }
        return out + "\"\"\""
    }

    private mutating func multilineLiteralString() -> String {
        var out = "'''" + (chance(0.5) ? newline : "")
        var afterQuotes = false
        for _ in 0..<int(0...10) {
            switch int(0...4) {
            case 0:
                out += newline
            case 1 where !afterQuotes:
                out += pick(["'", "''"])
                afterQuotes = true
                continue
            default:
                out += pick(Self.plainPieces.filter { $0 != "'" } + ["\\", "\"\"\"", "\t", "\\n"])
            }
            afterQuotes = false
        }
        if !afterQuotes && chance(0.2) { out += pick(["'", "''"]) }
        return out + "'''"
    }

    private mutating func withUnderscores(_ digits: String) -> String {
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && chance(0.15) { out += "_" }
            out.append(digit)
        }
        return out
    }

    private mutating func integerValue() -> String {
        switch int(0...9) {
        case 0: return pick(["9223372036854775807", "-9223372036854775808", "+9223372036854775807", "0", "+0", "-0", "0x7FFFFFFFFFFFFFFF", "0o777777777777777777777", "0b" + String(repeating: "1", count: 63)])
        case 1:
            let value = UInt64.random(in: 0...UInt64(Int64.max), using: &rng) >> UInt64(int(0...60))
            return "0x" + String(repeating: "0", count: int(0...2)) + withUnderscores(String(value, radix: 16, uppercase: chance(0.5)))
        case 2:
            return "0o" + withUnderscores(String(UInt64.random(in: 0...0xFFFFFF, using: &rng), radix: 8))
        case 3:
            return "0b" + String(repeating: "0", count: int(0...1)) + withUnderscores(String(UInt64.random(in: 0...0xFFFF, using: &rng), radix: 2))
        default:
            let magnitude = UInt64.random(in: 0...UInt64(Int64.max), using: &rng) >> UInt64(int(0...62))
            let sign = magnitude == 0 ? pick(["", "+", "-"]) : pick(["", "", "+", "-"])
            return sign + withUnderscores(String(magnitude))
        }
    }

    private mutating func digits(_ count: Int) -> String {
        String((0..<count).map { _ in Character(String(int(0...9))) })
    }

    private mutating func floatValue() -> String {
        if chance(0.1) {
            return pick(["inf", "+inf", "-inf", "nan", "+nan", "-nan", "0.0", "-0.0", "+0.0", "1e308", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "0.1", "1e-7"])
        }
        let sign = pick(["", "", "+", "-"])
        var integer = chance(0.3) ? "0" : String(int(1...9)) + digits(int(0...6))
        integer = withUnderscores(integer)
        var text = sign + integer
        let hasFraction = chance(0.7)
        if hasFraction { text += "." + withUnderscores(digits(int(1...10))) }
        if !hasFraction || chance(0.3) {
            text += pick(["e", "E"]) + pick(["", "+", "-"]) + withUnderscores(String(int(0...2)) + digits(int(0...1)))
        }
        return text
    }

    private mutating func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    private mutating func dateTimeValue() -> String {
        let year = int(1...9999)
        let month = int(1...12)
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        let yearText = String(repeating: "0", count: 4 - String(year).count) + String(year)
        let date = yearText + "-" + two(month) + "-" + two(int(1...days))
        var time = two(int(0...23)) + ":" + two(int(0...59)) + ":" + two(int(0...59))
        if chance(0.4) { time += "." + digits(int(1...10)) }
        let offset: String = chance(0.4) ? pick(["Z", "z"]) : pick(["+", "-"]) + two(int(0...23)) + ":" + two(int(0...59))
        switch int(0...3) {
        case 0: return date + pick(["T", "t", " "]) + time + offset
        case 1: return date + pick(["T", "t", " "]) + time
        case 2: return date
        default: return time
        }
    }

    private mutating func arrayTrivia() -> String {
        switch int(0...5) {
        case 0: return ""
        case 1: return " "
        case 2: return newline + pick(["", "  ", "\t"])
        case 3: return " " + comment() + newline + "  "
        case 4: return newline + newline
        default: return pick(["\t", "  "])
        }
    }

    private mutating func arrayValue(depth: Int) -> String {
        let count = int(0...5)
        var out = "[" + arrayTrivia()
        for index in 0..<count {
            out += value(depth: depth) + arrayTrivia()
            if index < count - 1 || (count > 0 && chance(0.3)) {
                out += "," + arrayTrivia()
            }
        }
        return out + "]"
    }

    private mutating func inlineTableValue(depth: Int) -> String {
        var pairs: [String] = []
        var remaining = int(0...4)
        while remaining > 0 {
            if chance(0.3) && remaining >= 2 {
                let prefix = freshName()
                for _ in 0..<2 {
                    pairs.append(renderKey([prefix, freshName()]) + equals() + value(depth: depth))
                }
                remaining -= 2
            } else {
                pairs.append(renderKey([freshName()]) + equals() + value(depth: depth))
                remaining -= 1
            }
        }
        let space = pick(["", " ", "\t"])
        return "{" + space + pairs.joined(separator: pick([",", ", ", " , ", ",\t"])) + space + "}"
    }
}
