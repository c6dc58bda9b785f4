/// The four string forms: basic "...", literal '...', and their multi-line versions.
extension Scanner {
    mutating func parseString() throws(TOMLError) -> String {
        if looking(at: "\"\"\"") { return try parseMultilineString(quote: UInt8(ascii: "\""), escapes: true) }
        if looking(at: "'''") { return try parseMultilineString(quote: UInt8(ascii: "'"), escapes: false) }
        if current == UInt8(ascii: "\"") { return try parseSingleLineString(quote: UInt8(ascii: "\""), escapes: true) }
        return try parseSingleLineString(quote: UInt8(ascii: "'"), escapes: false)
    }

    private mutating func parseSingleLineString(quote: UInt8, escapes: Bool) throws(TOMLError) -> String {
        advance()
        var out: [UInt8] = []
        while true {
            guard let byte = current else { throw error("unterminated string") }
            if byte == quote {
                advance()
                return String(decoding: out, as: UTF8.self)
            }
            if byte == 0x0A || byte == 0x0D { throw error("newline in a single-line string (use \"\"\" for multi-line strings)") }
            if isForbiddenControl(byte) { throw error("control character \(describe(byte)) in a string; escape it") }
            if escapes && byte == UInt8(ascii: "\\") {
                out += try parseEscape()
                continue
            }
            out.append(byte)
            advance()
        }
    }

    private mutating func parseMultilineString(quote: UInt8, escapes: Bool) throws(TOMLError) -> String {
        advance(3)
        // A newline right after the opening delimiter is not part of the string.
        _ = try skipNewline()
        var out: [UInt8] = []
        while true {
            guard let byte = current else { throw error("unterminated multi-line string") }
            if byte == quote && peek(1) == quote && peek(2) == quote {
                // Up to two quotes may stand just before the closing delimiter.
                var extra = 0
                while extra < 2 && peek(3 + extra) == quote { extra += 1 }
                out += repeatElement(quote, count: extra)
                advance(3 + extra)
                return String(decoding: out, as: UTF8.self)
            }
            if byte == 0x0A || byte == 0x0D {
                _ = try skipNewline()
                out.append(0x0A)
                continue
            }
            if isForbiddenControl(byte) { throw error("control character \(describe(byte)) in a string; escape it") }
            if escapes && byte == UInt8(ascii: "\\") {
                if try skipLineEndingBackslash() { continue }
                out += try parseEscape()
                continue
            }
            out.append(byte)
            advance()
        }
    }

    /// "\" followed by optional whitespace and a newline: the newline and all whitespace
    /// and newlines after it are trimmed.
    private mutating func skipLineEndingBackslash() throws(TOMLError) -> Bool {
        var offset = 1
        while let byte = peek(offset), byte == 0x20 || byte == 0x09 { offset += 1 }
        guard peek(offset) == 0x0A || (peek(offset) == 0x0D && peek(offset + 1) == 0x0A) else { return false }
        advance(offset)
        while true {
            skipWhitespace()
            if !(try skipNewline()) { return true }
        }
    }

    private mutating func parseEscape() throws(TOMLError) -> [UInt8] {
        let start = position
        advance()
        guard let byte = current else { throw error("unterminated escape sequence") }
        advance()
        switch byte {
        case UInt8(ascii: "b"): return [0x08]
        case UInt8(ascii: "t"): return [0x09]
        case UInt8(ascii: "n"): return [0x0A]
        case UInt8(ascii: "f"): return [0x0C]
        case UInt8(ascii: "r"): return [0x0D]
        case UInt8(ascii: "\""): return [0x22]
        case UInt8(ascii: "\\"): return [0x5C]
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            let count = byte == UInt8(ascii: "u") ? 4 : 8
            var value: UInt32 = 0
            for _ in 0..<count {
                guard let digit = current, let nibble = hexValue(digit) else {
                    throw TOMLError("\\\(Character(Unicode.Scalar(byte))) needs \(count) hexadecimal digits", at: start)
                }
                value = value << 4 | UInt32(nibble)
                advance()
            }
            guard let scalar = Unicode.Scalar(value) else {
                throw TOMLError("\\\(Character(Unicode.Scalar(byte))) escape U+\(String(value, radix: 16, uppercase: true)) is not a Unicode scalar value", at: start)
            }
            return Array(String(Character(scalar)).utf8)
        default:
            throw TOMLError("invalid escape sequence \\\(Character(Unicode.Scalar(byte)))", at: start)
        }
    }
}

func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
}
