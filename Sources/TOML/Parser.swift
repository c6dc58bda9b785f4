/// The document-level grammar: lines holding nothing, a key/value pair or a
/// table header. Keys, values and their parts are in the `Parser+*` files;
/// what those lines mean for the table tree is `DocumentBuilder`'s business.
struct Parser {
    var scanner: Scanner
    var builder = DocumentBuilder()
    /// Current nesting of arrays and inline tables, bounded so that hostile
    /// input cannot overflow the stack.
    var depth = 0

    init(bytes: [UInt8]) {
        scanner = Scanner(bytes: bytes)
    }

    mutating func parseDocument() throws(TOMLError) -> TOMLTable {
        while true {
            scanner.skipWhitespace()
            guard let byte = scanner.current else { break }
            switch byte {
            case ASCII.hash, ASCII.lineFeed, ASCII.carriageReturn:
                try scanner.expectEndOfLine(after: "a comment")
            case ASCII.openBracket:
                let header = try parseHeader()
                try scanner.expectEndOfLine(after: "the header \(header.display)")
            default:
                try parseKeyValueLine()
                try scanner.expectEndOfLine(after: "a value")
            }
        }
        return builder.finish()
    }

    /// How a header is shown in messages, computed only when one is needed.
    struct HeaderDescription {
        let key: [KeyComponent]
        let isArray: Bool
        var display: String { isArray ? "[[\(KeyPath.render(key))]]" : "[\(KeyPath.render(key))]" }
    }

    /// `[a.b]` or `[[a.b]]`.
    private mutating func parseHeader() throws(TOMLError) -> HeaderDescription {
        let header = scanner.position()
        let isArray = scanner.peek(1) == ASCII.openBracket
        scanner.advance(isArray ? 2 : 1)
        scanner.skipWhitespace()
        let key = try parseKey(context: isArray ? "in the array-of-tables header" : "in the table header")
        scanner.skipWhitespace()
        let description = HeaderDescription(key: key, isArray: isArray)
        var display: String { description.display }
        if isArray {
            guard scanner.current == ASCII.closeBracket, scanner.peek(1) == ASCII.closeBracket else {
                // With one ']' present, point at where the second is missing.
                let at = scanner.current == ASCII.closeBracket ? scanner.offset + 1 : scanner.offset
                throw scanner.error("expected ']]' to close the array-of-tables header \(display), found \(scanner.describe(at: at))\(spaceHint(key))", at: at)
            }
            scanner.advance(2)
            try builder.appendArrayTable(key, header: header)
        } else {
            guard scanner.current == ASCII.closeBracket else {
                throw scanner.error("expected ']' to close the table header \(display), found \(scanner.describeCurrent())\(spaceHint(key))")
            }
            scanner.advance()
            try builder.defineTable(key, header: header)
        }
        return description
    }

    private mutating func parseKeyValueLine() throws(TOMLError) {
        let (key, value) = try parseKeyValue()
        try builder.setValue(key, value)
    }

    /// `key = value`, shared by document lines and inline tables.
    mutating func parseKeyValue() throws(TOMLError) -> ([KeyComponent], TOMLValue) {
        let key = try parseKey(context: nil)
        scanner.skipWhitespace()
        guard scanner.current == ASCII.equals else {
            throw scanner.error("expected '=' after key \(KeyPath.quoted(key)), found \(scanner.describeCurrent())\(spaceHint(key))")
        }
        scanner.advance()
        scanner.skipWhitespace()
        let value = try parseValue()
        return (key, value)
    }

    /// People write `my key = 1`; say why that fails rather than only what.
    private func spaceHint(_ key: [KeyComponent]) -> String {
        guard let byte = scanner.current, ASCII.isBareKeyByte(byte),
              scanner.offset > 0, scanner.bytes[scanner.offset - 1] == ASCII.space || scanner.bytes[scanner.offset - 1] == ASCII.tab
        else { return "" }
        return " (a key containing spaces must be quoted)"
    }
}
