/// A JSON value, as vpnexec reads vpnd's answer to a launch without Foundation (whose
/// start-up a launch would pay for one line of JSON).
public enum JSONValue: Equatable, Sendable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    public subscript(key: String) -> JSONValue? {
        if case let .object(members) = self { return members[key] }
        return nil
    }

    public var string: String? { if case let .string(value) = self { value } else { nil } }
    public var bool: Bool? { if case let .bool(value) = self { value } else { nil } }
    public var array: [JSONValue]? { if case let .array(values) = self { values } else { nil } }
    public var isNull: Bool { self == .null }
}

/// RFC 8259 text to a `JSONValue`: one value, whitespace around it; nesting bounded, so that
/// no answer can exhaust the stack.
public struct JSONReader {
    public struct Failure: Error, CustomStringConvertible, Equatable, Sendable {
        public let reason: String
        public let offset: Int
        public var description: String { "\(reason) at byte \(offset)" }
    }

    public static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        var reader = JSONReader(bytes)
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.failure("text after the value") }
        return value
    }

    private func failure(_ reason: String) -> Failure { Failure(reason: reason, offset: index) }

    private mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[index]) { index += 1 }
    }

    private mutating func expect(_ word: String) throws(Failure) {
        for byte in word.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw failure("expected \(word)") }
            index += 1
        }
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard depth < Self.maximumDepth else { throw failure("nested deeper than \(Self.maximumDepth)") }
        skipWhitespace()
        guard index < bytes.count else { throw failure("a value expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("a key expected") }
                let key = try string()
                skipWhitespace()
                try expect(":")
                members[key] = try value(depth: depth + 1)
                skipWhitespace()
                guard index < bytes.count else { throw failure("an object not closed") }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                try expect(",")
            }
        case UInt8(ascii: "["):
            index += 1
            var values: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
            while true {
                values.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw failure("an array not closed") }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                try expect(",")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        default:
            return .number(try number())
        }
    }

    private mutating func number() throws(Failure) -> Double {
        let start = index
        while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
        guard index > start, let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else {
            index = start
            throw failure("a value expected")
        }
        return value
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a \\u escape cut short") }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a \\u escape with a non-hex digit")
            }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    private mutating func string() throws(Failure) -> String {
        index += 1
        var text: [UInt8] = []
        func append(_ scalar: Unicode.Scalar) { text += Array(String(Character(scalar)).utf8) }
        while true {
            guard index < bytes.count else { throw failure("a string not closed") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw failure("an escape cut short") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0c)
                case UInt8(ascii: "n"): text.append(0x0a)
                case UInt8(ascii: "r"): text.append(0x0d)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xd800..<0xdc00).contains(code) {
                        // A high surrogate: its low one must follow.
                        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw failure("a lone surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xdc00..<0xe000).contains(low) else { throw failure("a lone surrogate") }
                        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw failure("a lone surrogate") }
                    append(scalar)
                default:
                    throw failure("an unknown escape")
                }
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                text.append(byte)
            }
        }
    }
}

/// Text as a JSON string, quotes included (what JSONEncoder writes, slashes plain).
public func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
