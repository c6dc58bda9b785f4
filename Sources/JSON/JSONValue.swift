/// JSON as values (RFC 8259), read from bytes another process wrote (a member's varlink
/// call to the names server; vpnd's answer to vpnexec, which links no Foundation): the reader is
/// bounded (message size by the framing, nesting here), refuses what the RFC does not allow
/// rather than guessing, and keeps an object's keys in order, a repeated key refused
/// (which of two a reader takes is where parsers disagree). Numbers are kept as integers
/// when they are integers (all varlink's io.systemd.Resolve numbers are), else as Double.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.integer(x), .integer(y)): x == y
        case let (.double(x), .double(y)): x == y
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case let .bool(value): hasher.combine(value)
        case let .integer(value): hasher.combine(value)
        case let .double(value): hasher.combine(value)
        case let .string(value): hasher.combine(value)
        case let .array(values): hasher.combine(values)
        case let .object(members):
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }

    /// The value of `key` in an object; nil for another kind or a missing key.
    public subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var string: String? { if case let .string(value) = self { value } else { nil } }
    public var bool: Bool? { if case let .bool(value) = self { value } else { nil } }
    public var array: [JSONValue]? { if case let .array(values) = self { values } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        public var offset: Int
    }

    /// Deeper than this is refused: varlink's Resolve calls nest three levels.
    public static let maxDepth = 32

    public init(parsing bytes: some Collection<UInt8>) throws(ParseError) {
        var reader = Reader(bytes: Array(bytes))
        reader.skipSpace()
        self = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.at == reader.bytes.count else { throw reader.error("text after the value") }
    }

    /// Compact text (no spaces), keys in their order.
    public var encoded: String {
        var text = ""
        write(into: &text)
        return text
    }

    private func write(into text: inout String) {
        switch self {
        case .null: text += "null"
        case let .bool(value): text += value ? "true" : "false"
        case let .integer(value): text += String(value)
        case let .double(value): text += value.isFinite ? "\(value)" : "null"
        case let .string(value): Self.quote(value, into: &text)
        case let .array(values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.write(into: &text)
            }
            text += "]"
        case let .object(members):
            text += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { text += "," }
                Self.quote(member.key, into: &text)
                text += ":"
                member.value.write(into: &text)
            }
            text += "}"
        }
    }

    private static func quote(_ string: String, into text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }

    private struct Reader {
        let bytes: [UInt8]
        var at = 0

        func error(_ what: String) -> ParseError { ParseError(description: "\(what) at byte \(at)", offset: at) }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[at]) { at += 1 }
        }

        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard depth < JSONValue.maxDepth else { throw error("nested too deep") }
            guard at < bytes.count else { throw error("end of text where a value was expected") }
            switch bytes[at] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return try number()
            }
        }

        mutating func literal(_ word: String) throws(ParseError) {
            let expected = Array(word.utf8)
            guard bytes.count - at >= expected.count, Array(bytes[at..<(at + expected.count)]) == expected else { throw error("not a value") }
            at += expected.count
        }

        mutating func object(depth: Int) throws(ParseError) -> JSONValue {
            at += 1
            var members: [(key: String, value: JSONValue)] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
                at += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw error("an object's key is not a string") }
                let key = try string()
                guard !members.contains(where: { $0.key == key }) else { throw error("key \"\(key)\" repeated") }
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw error("no colon after a key") }
                at += 1
                skipSpace()
                members.append((key, try value(depth: depth + 1)))
                skipSpace()
                guard at < bytes.count else { throw error("unterminated object") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                guard bytes[at] == UInt8(ascii: "}") else { throw error("expected , or } in an object") }
                at += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> JSONValue {
            at += 1
            var values: [JSONValue] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
                at += 1
                return .array(values)
            }
            while true {
                skipSpace()
                values.append(try value(depth: depth + 1))
                skipSpace()
                guard at < bytes.count else { throw error("unterminated array") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                guard bytes[at] == UInt8(ascii: "]") else { throw error("expected , or ] in an array") }
                at += 1
                return .array(values)
            }
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard bytes.count - at >= 4 else { throw error("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[at]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw error("bad \\u escape")
                }
                value = value << 4 | digit
                at += 1
            }
            return value
        }

        mutating func string() throws(ParseError) -> String {
            at += 1
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            func flush() throws(ParseError) {
                guard !run.isEmpty else { return }
                guard let text = String(validating: run, as: UTF8.self) else { throw error("not UTF-8") }
                scalars.append(contentsOf: text.unicodeScalars)
                run.removeAll()
            }
            while true {
                guard at < bytes.count else { throw error("unterminated string") }
                let byte = bytes[at]
                switch byte {
                case UInt8(ascii: "\""):
                    at += 1
                    try flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flush()
                    at += 1
                    guard at < bytes.count else { throw error("unterminated escape") }
                    let escaped = bytes[at]
                    at += 1
                    switch escaped {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0c}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        var value = try hex4()
                        if (0xd800..<0xdc00).contains(value) {
                            guard bytes.count - at >= 6, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else { throw error("lone surrogate") }
                            at += 2
                            let low = try hex4()
                            guard (0xdc00..<0xe000).contains(low) else { throw error("lone surrogate") }
                            value = 0x10000 + ((value - 0xd800) << 10) + (low - 0xdc00)
                        }
                        guard let scalar = Unicode.Scalar(value) else { throw error("lone surrogate") }
                        scalars.append(scalar)
                    default: throw error("bad escape")
                    }
                default:
                    guard byte >= 0x20 else { throw error("control character in a string") }
                    run.append(byte)
                    at += 1
                }
            }
        }

        mutating func number() throws(ParseError) -> JSONValue {
            let start = at
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            func digits() -> Int {
                let from = at
                while at < bytes.count, (0x30...0x39).contains(bytes[at]) { at += 1 }
                return at - from
            }
            let integerDigits = digits()
            guard integerDigits > 0 else { throw error("not a value") }
            guard !(integerDigits > 1 && bytes[at - integerDigits] == 0x30) else { throw error("leading zero") }
            var integral = true
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                integral = false
                guard digits() > 0 else { throw error("no digits after the point") }
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                at += 1
                integral = false
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard digits() > 0 else { throw error("no digits in the exponent") }
            }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            if integral, let value = Int64(text) { return .integer(value) }
            // 1e999 reads as infinity, which JSON cannot write back (found by scripts/fuzz).
            guard let value = Double(text), value.isFinite else { throw error("number out of range") }
            return .double(value)
        }
    }
}
