/// Bytes of the document with a cursor that knows its line and column.
struct Scanner {
    let bytes: [UInt8]
    private(set) var index = 0
    private(set) var line = 1
    private(set) var column = 1

    init(_ bytes: [UInt8]) {
        // A UTF-8 byte order mark is not part of the document.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            self.bytes = Array(bytes.dropFirst(3))
        } else {
            self.bytes = bytes
        }
    }

    var position: SourcePosition { SourcePosition(line: line, column: column) }
    var atEnd: Bool { index >= bytes.count }
    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    func peek(_ offset: Int = 0) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    func looking(at text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard index + utf8.count <= bytes.count else { return false }
        return bytes[index..<(index + utf8.count)].elementsEqual(utf8)
    }

    mutating func advance(_ count: Int = 1) {
        for _ in 0..<count where index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                // Count scalars, not bytes: continuation bytes do not move the column.
                column += 1
            }
        }
        // The column was bumped for the lead byte; continuation bytes followed it.
    }

    func error(_ message: String) -> TOMLError { TOMLError(message, at: position) }

    /// Spaces and tabs.
    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 { advance() }
    }

    /// A comment up to (not including) the end of line; control characters other than tab
    /// are not allowed in it.
    mutating func skipComment() throws(TOMLError) {
        guard current == UInt8(ascii: "#") else { return }
        advance()
        while let byte = current, byte != 0x0A {
            if byte == 0x0D && peek(1) == 0x0A { return }
            if isForbiddenControl(byte) { throw error("control character \(describe(byte)) in a comment") }
            advance()
        }
    }

    /// One newline (LF or CRLF); false if not at one.
    mutating func skipNewline() throws(TOMLError) -> Bool {
        if current == 0x0A { advance(); return true }
        if current == 0x0D {
            guard peek(1) == 0x0A else { throw error("carriage return not followed by a line feed") }
            advance(2)
            return true
        }
        return false
    }

    /// Whitespace, comments and newlines (inside arrays).
    mutating func skipBlank() throws(TOMLError) {
        while true {
            skipWhitespace()
            try skipComment()
            if !(try skipNewline()) { return }
        }
    }

    func isForbiddenControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    func describe(_ byte: UInt8) -> String {
        "U+" + String(repeating: "0", count: byte < 16 ? 3 : 2) + String(byte, radix: 16, uppercase: true)
    }
}
