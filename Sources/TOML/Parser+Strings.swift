import HexDigits

/// The four string forms: basic ("..."), literal ('...'), and their
/// multi-line variants. Runs of plain text are copied as byte ranges; only
/// escapes and CRLF line endings need per-character work.
extension Parser {
    /// A single-line basic string starting at the cursor's `"`.
    mutating func parseBasicString() throws(TOMLError) -> String {
        let open = scanner.offset
        scanner.advance()
        var buffer: [UInt8] = []
        var runStart = scanner.offset
        var usedBuffer = false
        while true {
            guard let byte = scanner.current else {
                throw scanner.error("unterminated string: missing the closing '\"' of the string that starts here", at: open)
            }
            switch byte {
            case ASCII.quote:
                let result: String
                if usedBuffer {
                    buffer.append(contentsOf: scanner.bytes[runStart..<scanner.offset])
                    result = String(decoding: buffer, as: UTF8.self)
                } else {
                    result = String(decoding: scanner.bytes[runStart..<scanner.offset], as: UTF8.self)
                }
                scanner.advance()
                return result
            case ASCII.backslash:
                buffer.append(contentsOf: scanner.bytes[runStart..<scanner.offset])
                usedBuffer = true
                try parseEscape(into: &buffer, multiline: false)
                runStart = scanner.offset
            case _ where scanner.isAtNewline:
                throw scanner.error("unterminated string: a basic string must end with '\"' on the line it starts (use \"\"\" for a multi-line string)", at: open)
            case _ where ASCII.isForbiddenControl(byte):
                throw controlCharacterError(in: "a string", escapable: true)
            default:
                scanner.advance()
            }
        }
    }

    /// A single-line literal string starting at the cursor's `'`; no escapes.
    mutating func parseLiteralString() throws(TOMLError) -> String {
        let open = scanner.offset
        scanner.advance()
        let start = scanner.offset
        while true {
            guard let byte = scanner.current else {
                throw scanner.error("unterminated string: missing the closing \"'\" of the literal string that starts here", at: open)
            }
            if byte == ASCII.apostrophe {
                let result = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
                scanner.advance()
                return result
            }
            if scanner.isAtNewline {
                throw scanner.error("unterminated string: a literal string must end with \"'\" on the line it starts (use ''' for a multi-line string)", at: open)
            }
            if ASCII.isForbiddenControl(byte) {
                throw controlCharacterError(in: "a literal string", escapable: false)
            }
            scanner.advance()
        }
    }

    /// A `"""` string. `start` is its position, for the unterminated-string
    /// message, which is only found after the lines it spans.
    mutating func parseMultilineBasicString(start: SourcePosition) throws(TOMLError) -> String {
        try parseMultilineString(delimiter: ASCII.quote, start: start)
    }

    mutating func parseMultilineLiteralString(start: SourcePosition) throws(TOMLError) -> String {
        try parseMultilineString(delimiter: ASCII.apostrophe, start: start)
    }

    private mutating func parseMultilineString(delimiter: UInt8, start: SourcePosition) throws(TOMLError) -> String {
        let isBasic = delimiter == ASCII.quote
        scanner.advance(3)
        // A line ending right after the opening delimiter is not content.
        if scanner.isAtNewline { scanner.consumeNewline() }
        var buffer: [UInt8] = []
        var runStart = scanner.offset
        while true {
            guard let byte = scanner.current else {
                let quotes = isBasic ? "\"\"\"" : "'''"
                throw TOMLError("unterminated multi-line string: missing the closing \(quotes) of the string that starts here", at: start)
            }
            switch byte {
            case delimiter:
                var run = 1
                while scanner.peek(run) == delimiter { run += 1 }
                if run < 3 {
                    scanner.advance(run)
                    continue
                }
                // Up to two quotes right before the closing three are content.
                if run > 5 {
                    throw scanner.error("too many quotes in a row: a multi-line string can only end with up to two quotes before its closing delimiter", at: scanner.offset + 5)
                }
                buffer.append(contentsOf: scanner.bytes[runStart..<(scanner.offset + run - 3)])
                scanner.advance(run)
                return String(decoding: buffer, as: UTF8.self)
            case ASCII.backslash where isBasic:
                buffer.append(contentsOf: scanner.bytes[runStart..<scanner.offset])
                try parseEscape(into: &buffer, multiline: true)
                runStart = scanner.offset
            case ASCII.lineFeed:
                scanner.consumeNewline()
            case ASCII.carriageReturn where scanner.isAtNewline:
                // Line endings inside the string become "\n" whatever the file uses.
                buffer.append(contentsOf: scanner.bytes[runStart..<scanner.offset])
                buffer.append(ASCII.lineFeed)
                scanner.consumeNewline()
                runStart = scanner.offset
            case _ where ASCII.isForbiddenControl(byte):
                throw controlCharacterError(in: isBasic ? "a string" : "a literal string", escapable: isBasic)
            default:
                scanner.advance()
            }
        }
    }

    /// An escape sequence at the cursor's backslash, appended as UTF-8.
    /// In multi-line strings a backslash ending a line swallows the line
    /// ending and all whitespace and blank lines after it.
    private mutating func parseEscape(into buffer: inout [UInt8], multiline: Bool) throws(TOMLError) {
        let backslash = scanner.offset
        guard let code = scanner.peek(1) else {
            throw scanner.error("unterminated string: the file ends after a backslash")
        }
        switch code {
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "t"): buffer.append(ASCII.tab)
        case UInt8(ascii: "n"): buffer.append(ASCII.lineFeed)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "r"): buffer.append(ASCII.carriageReturn)
        case ASCII.quote: buffer.append(ASCII.quote)
        case ASCII.backslash: buffer.append(ASCII.backslash)
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            let digits = code == UInt8(ascii: "u") ? 4 : 8
            var value: UInt32 = 0
            for index in 0..<digits {
                guard let byte = scanner.peek(2 + index), let digit = ASCII.hexValue(byte) else {
                    throw scanner.error("invalid escape sequence: \\\(Character(Unicode.Scalar(code))) must be followed by exactly \(digits) hexadecimal digits", at: backslash)
                }
                value = value << 4 | digit
            }
            guard UTF8Validation.isScalarValue(value) else {
                let text = String(decoding: scanner.bytes[backslash..<(backslash + 2 + digits)], as: UTF8.self)
                throw scanner.error("invalid escape sequence \(text): U+\(hexDigits(value, minimum: 4, uppercase: true)) is not a Unicode scalar value (surrogates and values above 10FFFF are not allowed)", at: backslash)
            }
            UTF8Validation.append(scalar: value, to: &buffer)
            scanner.advance(2 + digits)
            return
        case ASCII.space, ASCII.tab, ASCII.lineFeed, ASCII.carriageReturn:
            guard multiline else {
                throw invalidEscape(at: backslash, multiline: multiline)
            }
            scanner.advance()
            scanner.skipWhitespace()
            guard scanner.isAtNewline else {
                throw scanner.error("invalid escape: a backslash followed by whitespace must end the line (line-ending backslash)", at: backslash)
            }
            while true {
                if scanner.isAtNewline {
                    scanner.consumeNewline()
                } else if scanner.current == ASCII.space || scanner.current == ASCII.tab {
                    scanner.advance()
                } else {
                    return
                }
            }
        default:
            throw invalidEscape(at: backslash, multiline: multiline)
        }
        scanner.advance(2)
    }

    private mutating func invalidEscape(at backslash: Int, multiline: Bool) -> TOMLError {
        let code = scanner.bytes[backslash + 1]
        let shown: String
        if ASCII.isForbiddenControl(code) || code == ASCII.lineFeed || code == ASCII.carriageReturn || code == ASCII.space || code == ASCII.tab {
            shown = "(a backslash followed by \(scanner.describe(at: backslash + 1)))"
        } else {
            shown = "\\" + String(decoding: scanner.bytes[(backslash + 1)..<characterEnd(from: backslash + 1)], as: UTF8.self)
        }
        var message = "invalid escape sequence \(shown); the escapes are \\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX and \\UXXXXXXXX"
        if !multiline && (code == ASCII.lineFeed || code == ASCII.carriageReturn || code == ASCII.space || code == ASCII.tab) {
            message += " (a line-ending backslash is only allowed in a multi-line string)"
        }
        return scanner.error(message, at: backslash)
    }

    private func characterEnd(from index: Int) -> Int {
        var end = index + 1
        while end < scanner.bytes.count, scanner.bytes[end] & 0xC0 == 0x80 { end += 1 }
        return end
    }

    private mutating func controlCharacterError(in what: String, escapable: Bool) -> TOMLError {
        let byte = scanner.current ?? 0
        var message = "\(scanner.describeCurrent()) is not allowed in \(what)"
        if byte == ASCII.carriageReturn {
            message = "a carriage return (U+000D) must be followed by a line feed; it is not allowed on its own in \(what)"
        } else if escapable {
            message += "; write it as \\u\(hexDigits(UInt32(byte), minimum: 4, uppercase: true))"
        }
        return scanner.error(message)
    }
}
