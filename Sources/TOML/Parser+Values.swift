/// Values: which kind starts here, plus the composite ones (arrays and
/// inline tables) and the bare words (booleans, inf, nan).
extension Parser {
    mutating func parseValue() throws(TOMLError) -> TOMLValue {
        let position = scanner.position()
        guard let byte = scanner.current else {
            throw scanner.error("expected a value, found the end of the file")
        }
        switch byte {
        case ASCII.quote:
            if scanner.peek(1) == ASCII.quote, scanner.peek(2) == ASCII.quote {
                return TOMLValue(.string(try parseMultilineBasicString(start: position)), at: position)
            }
            return TOMLValue(.string(try parseBasicString()), at: position)
        case ASCII.apostrophe:
            if scanner.peek(1) == ASCII.apostrophe, scanner.peek(2) == ASCII.apostrophe {
                return TOMLValue(.string(try parseMultilineLiteralString(start: position)), at: position)
            }
            return TOMLValue(.string(try parseLiteralString()), at: position)
        case ASCII.openBracket:
            return try parseArray(at: position)
        case ASCII.openBrace:
            return try parseInlineTable(at: position)
        case _ where ASCII.isDigit(byte):
            if looksLikeDateOrTime() {
                return TOMLValue(.dateTime(try parseDateTime()), at: position)
            }
            return TOMLValue(try parseNumber(), at: position)
        case ASCII.plus, ASCII.minus:
            return TOMLValue(try parseNumber(), at: position)
        case _ where ASCII.isLetter(byte):
            return TOMLValue(try parseBareWord(), at: position)
        case ASCII.lineFeed, ASCII.carriageReturn, ASCII.hash:
            throw scanner.error("expected a value, found \(scanner.describeCurrent())")
        default:
            throw scanner.error("expected a value (a string, number, boolean, date-time, array or inline table), found \(scanner.describeCurrent())")
        }
    }

    /// `true`, `false`, `inf` and `nan`. Anything else made of letters is
    /// most likely a string someone forgot to quote, and the message says so.
    private mutating func parseBareWord() throws(TOMLError) -> TOMLValueKind {
        let start = scanner.offset
        while let byte = scanner.current, ASCII.isBareKeyByte(byte) || byte == ASCII.dot {
            scanner.advance()
        }
        let word = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
        switch word {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        case "inf": return .float(.infinity)
        case "nan": return .float(.nan)
        default:
            let lowered = word.lowercased()
            if lowered == "true" || lowered == "false" {
                throw scanner.error("invalid value \(word): booleans are written in lower case (true, false)", at: start)
            }
            if lowered == "inf" || lowered == "nan" {
                throw scanner.error("invalid value \(word): special floats are written in lower case (inf, nan)", at: start)
            }
            throw scanner.error("invalid value \(word): strings must be quoted (\"\(word)\")", at: start)
        }
    }

    /// Arrays may span lines and hold comments; elements may be of mixed
    /// types; a trailing comma is allowed.
    private mutating func parseArray(at position: SourcePosition) throws(TOMLError) -> TOMLValue {
        try enterNesting()
        defer { depth -= 1 }
        scanner.advance()
        var elements: [TOMLValue] = []
        while true {
            try scanner.skipWhitespaceCommentsAndNewlines()
            guard let byte = scanner.current else {
                throw scanner.error("unterminated array: expected ']' to close the array opened at line \(position.line), column \(position.column)")
            }
            if byte == ASCII.closeBracket {
                scanner.advance()
                break
            }
            if byte == ASCII.comma {
                throw scanner.error("expected a value before ',' in the array")
            }
            if looksLikeKeyValuePair() {
                throw scanner.error("unterminated array: expected ']' to close the array opened at line \(position.line), column \(position.column), found a key/value pair")
            }
            elements.append(try parseValue())
            try scanner.skipWhitespaceCommentsAndNewlines()
            guard let separator = scanner.current else {
                throw scanner.error("unterminated array: expected ']' to close the array opened at line \(position.line), column \(position.column)")
            }
            if separator == ASCII.comma {
                scanner.advance()
            } else if separator == ASCII.closeBracket {
                scanner.advance()
                break
            } else {
                throw scanner.error("expected ',' or ']' after an array element, found \(scanner.describeCurrent())")
            }
        }
        return TOMLValue(.array(elements), at: position)
    }

    /// Inline tables are on one line, with no trailing comma (TOML 1.0), and
    /// are complete once closed.
    private mutating func parseInlineTable(at position: SourcePosition) throws(TOMLError) -> TOMLValue {
        try enterNesting()
        defer { depth -= 1 }
        scanner.advance()
        let table = InlineTableBuilder(position: position, depth: depth)
        scanner.skipWhitespace()
        if scanner.current == ASCII.closeBrace {
            scanner.advance()
            return table.finish()
        }
        while true {
            scanner.skipWhitespace()
            try rejectLineBreakInInlineTable()
            if scanner.current == ASCII.closeBrace {
                throw scanner.error("a trailing comma is not allowed in an inline table")
            }
            let (key, value) = try parseKeyValue()
            try table.insert(key, value)
            scanner.skipWhitespace()
            try rejectLineBreakInInlineTable()
            guard let byte = scanner.current else {
                throw scanner.error("unterminated inline table: expected '}' to close the table opened at line \(position.line), column \(position.column)")
            }
            if byte == ASCII.closeBrace {
                scanner.advance()
                return table.finish()
            }
            guard byte == ASCII.comma else {
                throw scanner.error("expected ',' or '}' after a value in an inline table, found \(scanner.describeCurrent())")
            }
            scanner.advance()
        }
    }

    private mutating func rejectLineBreakInInlineTable() throws(TOMLError) {
        if scanner.isAtNewline {
            throw scanner.error("an inline table must be written on a single line (use a [table] header for longer tables)")
        }
        if scanner.current == ASCII.hash {
            throw scanner.error("comments are not allowed inside an inline table")
        }
    }

    /// `name =` or `a.b =` ahead: most likely the line after an array whose
    /// closing bracket was forgotten, which deserves a better message than
    /// "strings must be quoted".
    private func looksLikeKeyValuePair() -> Bool {
        guard let first = scanner.current, ASCII.isLetter(first) || first == ASCII.underscore else { return false }
        var index = scanner.offset
        while let byte = scanner.byte(at: index),
              ASCII.isBareKeyByte(byte) || byte == ASCII.dot || byte == ASCII.space || byte == ASCII.tab {
            index += 1
        }
        return scanner.byte(at: index) == ASCII.equals
    }

    private mutating func enterNesting() throws(TOMLError) {
        depth += 1
        if depth > TOML.maximumNestingDepth {
            throw scanner.error("arrays and inline tables are nested too deeply (the limit is \(TOML.maximumNestingDepth) levels)")
        }
    }
}
