/// Just enough JSON to read the oracle's answers: objects keep key order,
/// because the differential tests also check that tables keep key order.
enum JSON: Equatable, CustomStringConvertible {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case let (.string(a), .string(b)), let (.number(a), .number(b)): return a == b
        case let (.bool(a), .bool(b)): return a == b
        case (.null, .null): return true
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    subscript(key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var description: String {
        switch self {
        case .string(let value): return JSON.quote(value)
        case .number(let value): return value
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        case .array(let items): return "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .object(let pairs): return "{" + pairs.map { JSON.quote($0.0) + ": " + $0.1.description }.joined(separator: ", ") + "}"
        }
    }

    static func quote(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let digits = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ text: String) throws -> JSON {
        var parser = Reader(scalars: Array(text.unicodeScalars))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == parser.scalars.count else { throw ParseError(description: "trailing characters in JSON") }
        return value
    }

    private struct Reader {
        let scalars: [Unicode.Scalar]
        var index = 0

        mutating func skipSpace() {
            while index < scalars.count, [" ", "\n", "\r", "\t"].contains(scalars[index]) { index += 1 }
        }

        mutating func expect(_ scalar: Unicode.Scalar) throws {
            skipSpace()
            guard index < scalars.count, scalars[index] == scalar else {
                throw ParseError(description: "expected '\(scalar)' at \(index) in JSON")
            }
            index += 1
        }

        mutating func value() throws -> JSON {
            skipSpace()
            guard index < scalars.count else { throw ParseError(description: "unexpected end of JSON") }
            switch scalars[index] {
            case "{":
                index += 1
                var pairs: [(String, JSON)] = []
                skipSpace()
                if scalars[index] == "}" { index += 1; return .object(pairs) }
                while true {
                    skipSpace()
                    let key = try string()
                    try expect(":")
                    pairs.append((key, try value()))
                    skipSpace()
                    if scalars[index] == "," { index += 1; continue }
                    try expect("}")
                    return .object(pairs)
                }
            case "[":
                index += 1
                var items: [JSON] = []
                skipSpace()
                if scalars[index] == "]" { index += 1; return .array(items) }
                while true {
                    items.append(try value())
                    skipSpace()
                    if scalars[index] == "," { index += 1; continue }
                    try expect("]")
                    return .array(items)
                }
            case "\"":
                return .string(try string())
            case "t":
                index += 4
                return .bool(true)
            case "f":
                index += 5
                return .bool(false)
            case "n":
                index += 4
                return .null
            default:
                let start = index
                while index < scalars.count, "+-0123456789.eE".unicodeScalars.contains(scalars[index]) { index += 1 }
                guard index > start else { throw ParseError(description: "unexpected '\(scalars[index])' in JSON") }
                var text = ""
                text.unicodeScalars.append(contentsOf: scalars[start..<index])
                return .number(text)
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= scalars.count else { throw ParseError(description: "short \\u escape in JSON") }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars[index..<(index + 4)])
            guard let value = UInt32(text, radix: 16) else { throw ParseError(description: "bad \\u escape in JSON") }
            index += 4
            return value
        }

        mutating func string() throws -> String {
            try expect("\"")
            var result = String.UnicodeScalarView()
            while true {
                guard index < scalars.count else { throw ParseError(description: "unterminated JSON string") }
                let scalar = scalars[index]
                index += 1
                if scalar == "\"" { return String(result) }
                guard scalar == "\\" else { result.append(scalar); continue }
                let code = scalars[index]
                index += 1
                switch code {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "b": result.append("\u{8}")
                case "f": result.append("\u{C}")
                case "/": result.append("/")
                case "\\": result.append("\\")
                case "\"": result.append("\"")
                case "u":
                    var value = try hex4()
                    if (0xD800..<0xDC00).contains(value), index + 1 < scalars.count, scalars[index] == "\\", scalars[index + 1] == "u" {
                        index += 2
                        let low = try hex4()
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let decoded = Unicode.Scalar(value) else { throw ParseError(description: "lone surrogate in JSON") }
                    result.append(decoded)
                default:
                    throw ParseError(description: "bad escape in JSON")
                }
            }
        }
    }
}
