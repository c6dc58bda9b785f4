/// Keys: bare (`name`), quoted (`"a b"`, `'c:\d'`) and dotted (`a."b".c`).
extension Parser {
    /// `context` completes "expected a key ..." messages, e.g. "in the table header".
    mutating func parseKey(context: String?) throws(TOMLError) -> [KeyComponent] {
        var components = [try parseSimpleKey(context: context)]
        while true {
            // Whitespace around the dots is allowed; a caller that finds no
            // dot next skips the same whitespace anyway.
            scanner.skipWhitespace()
            guard scanner.current == ASCII.dot else { return components }
            scanner.advance()
            scanner.skipWhitespace()
            components.append(try parseSimpleKey(context: "after '.'"))
        }
    }

    private mutating func parseSimpleKey(context: String?) throws(TOMLError) -> KeyComponent {
        let position = scanner.position()
        guard let byte = scanner.current else {
            throw expectedKey(context: context)
        }
        switch byte {
        case ASCII.quote:
            if scanner.peek(1) == ASCII.quote, scanner.peek(2) == ASCII.quote {
                throw scanner.error("a multi-line string cannot be used as a key")
            }
            return KeyComponent(name: try parseBasicString(), position: position)
        case ASCII.apostrophe:
            if scanner.peek(1) == ASCII.apostrophe, scanner.peek(2) == ASCII.apostrophe {
                throw scanner.error("a multi-line string cannot be used as a key")
            }
            return KeyComponent(name: try parseLiteralString(), position: position)
        case _ where ASCII.isBareKeyByte(byte):
            let start = scanner.offset
            while let next = scanner.current, ASCII.isBareKeyByte(next) {
                scanner.advance()
            }
            let name = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
            return KeyComponent(name: name, position: position)
        default:
            throw expectedKey(context: context)
        }
    }

    private mutating func expectedKey(context: String?) -> TOMLError {
        var message = "expected a key"
        if let context { message += " " + context }
        message += ", found " + scanner.describeCurrent()
        if let byte = scanner.current, byte >= 0x80 || (byte > 0x20 && byte < 0x7F && !"=#[]{},.".utf8.contains(byte)) {
            message += " (unquoted keys may only contain A-Z, a-z, 0-9, '_' and '-'; quote any other key)"
        }
        return scanner.error(message)
    }
}
