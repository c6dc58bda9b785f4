import HexDigits

/// A cursor over the document's bytes that knows which line it is on.
///
/// The parser works on UTF-8 bytes because TOML's grammar is defined on ASCII
/// and every non-ASCII scalar is simply "allowed here or not". Columns are
/// only needed when a position is recorded, so they are computed lazily from
/// the start of the line; a cache of the last computed column keeps that
/// linear even on one very long line (a huge inline array, say).
struct Scanner {
    let bytes: [UInt8]
    private(set) var offset: Int
    private(set) var line = 1
    private var lineStart: Int
    private var cachedOffset: Int
    private var cachedColumn = 1

    init(bytes: [UInt8]) {
        self.bytes = bytes
        // A UTF-8 byte-order mark is not content; positions start after it.
        let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
        let start = hasBOM ? 3 : 0
        offset = start
        lineStart = start
        cachedOffset = start
    }

    var isAtEnd: Bool { offset >= bytes.count }

    /// The byte under the cursor, nil at the end of the document.
    var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    func peek(_ distance: Int) -> UInt8? {
        let index = offset + distance
        return index < bytes.count ? bytes[index] : nil
    }

    func byte(at index: Int) -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    mutating func advance(_ count: Int = 1) {
        offset += count
    }

    /// True at "\n" or "\r\n"; a lone "\r" is not a line ending in TOML.
    var isAtNewline: Bool {
        guard let byte = current else { return false }
        return byte == ASCII.lineFeed || (byte == ASCII.carriageReturn && peek(1) == ASCII.lineFeed)
    }

    /// Steps over the line ending under the cursor (which must be one).
    mutating func consumeNewline() {
        if bytes[offset] == ASCII.carriageReturn { offset += 1 }
        offset += 1
        line += 1
        lineStart = offset
        cachedOffset = offset
        cachedColumn = 1
    }

    /// Position of a byte on the current line (the cursor's, by default).
    mutating func position(at target: Int? = nil) -> SourcePosition {
        let target = target ?? offset
        var from = lineStart
        var column = 1
        if target >= cachedOffset {
            from = cachedOffset
            column = cachedColumn
        }
        while from < target {
            // Each scalar has exactly one byte that is not a continuation byte.
            if bytes[from] & 0xC0 != 0x80 { column += 1 }
            from += 1
        }
        cachedOffset = target
        cachedColumn = column
        return SourcePosition(line: line, column: column)
    }

    mutating func error(_ message: String, at target: Int? = nil) -> TOMLError {
        TOMLError(message, at: position(at: target))
    }

    // MARK: Whitespace, comments and line endings

    /// Spaces and tabs, the only whitespace TOML knows within a line.
    mutating func skipWhitespace() {
        while offset < bytes.count, bytes[offset] == ASCII.space || bytes[offset] == ASCII.tab {
            offset += 1
        }
    }

    /// Steps over a comment starting at the cursor's "#", up to (not over)
    /// the line ending, rejecting the control characters TOML forbids there.
    mutating func skipComment() throws(TOMLError) {
        offset += 1
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == ASCII.lineFeed { return }
            if byte == ASCII.carriageReturn {
                if peek(1) == ASCII.lineFeed { return }
                throw error("a carriage return (U+000D) must be followed by a line feed; it is not allowed on its own, even in a comment")
            }
            if ASCII.isForbiddenControl(byte) {
                throw error("\(describeCurrent()) is not allowed in a comment")
            }
            offset += 1
        }
    }

    /// Skips everything that may separate array elements: whitespace,
    /// comments and line endings.
    mutating func skipWhitespaceCommentsAndNewlines() throws(TOMLError) {
        while let byte = current {
            if byte == ASCII.space || byte == ASCII.tab {
                offset += 1
            } else if isAtNewline {
                consumeNewline()
            } else if byte == ASCII.hash {
                try skipComment()
            } else {
                return
            }
        }
    }

    /// Ends a line holding a key/value pair, a table header or nothing:
    /// optional whitespace and comment, then a line ending or the end of the
    /// document. `after` says what came before, for the message.
    mutating func expectEndOfLine(after what: @autoclosure () -> String) throws(TOMLError) {
        skipWhitespace()
        if current == ASCII.hash { try skipComment() }
        guard let byte = current else { return }
        if isAtNewline {
            consumeNewline()
            return
        }
        if byte == ASCII.carriageReturn {
            throw error("a carriage return (U+000D) must be followed by a line feed; it is not allowed on its own")
        }
        throw error("expected the end of the line after \(what()), found \(describeCurrent())")
    }

    // MARK: Describing characters in messages

    /// The character under the cursor as a message should name it.
    func describeCurrent() -> String {
        describe(at: offset)
    }

    func describe(at index: Int) -> String {
        guard index < bytes.count else { return "the end of the file" }
        let byte = bytes[index]
        switch byte {
        case ASCII.lineFeed:
            return "the end of the line"
        case ASCII.carriageReturn where self.byte(at: index + 1) == ASCII.lineFeed:
            return "the end of the line"
        case ASCII.tab:
            return "a tab"
        case 0..<0x20, ASCII.delete:
            return "control character U+\(hexDigits(UInt32(byte), minimum: 4, uppercase: true))"
        case ASCII.apostrophe:
            return "\"'\""
        case 0x20..<0x7F:
            return "'\(Character(Unicode.Scalar(byte)))'"
        default:
            // The document was validated as UTF-8, so this is a whole scalar.
            var end = index + 1
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
            let text = String(decoding: bytes[index..<end], as: UTF8.self)
            let scalar = text.unicodeScalars.first.map { UInt32($0.value) } ?? 0
            return "'\(text)' (U+\(hexDigits(scalar, minimum: 4, uppercase: true)))"
        }
    }
}
