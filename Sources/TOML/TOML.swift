import HexDigits

/// Entry points of the TOML v1.0.0 parser.
///
/// ```swift
/// do {
///     let policy = try TOML.parse(bytes)
///     guard let mtu = policy.value(atPath: ["tunnel", "mtu"]) else { ... }
///     guard mtu.integer != nil else {
///         throw TOMLError("\"mtu\" must be an integer, not \(mtu.typeNameWithArticle)", at: mtu.position)
///     }
/// } catch {
///     print(error.description(file: path))   // policy.toml:7:8: ...
/// }
/// ```
public enum TOML {
    /// How deeply arrays, inline tables and tables may nest. Real documents
    /// stay in single digits; the limit only stops crafted input from
    /// exhausting the stack.
    public static let maximumNestingDepth = 128

    /// Parses a whole document. Every key and value in the result carries
    /// its position; any problem is reported as a `TOMLError` with the
    /// position of the offending character, key or value.
    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        try parse(Array(text.utf8))
    }

    /// Parses a document from its raw bytes, which must be UTF-8 (a leading
    /// byte-order mark is allowed and ignored).
    public static func parse(_ bytes: [UInt8]) throws(TOMLError) -> TOMLTable {
        if let invalid = UTF8Validation.firstInvalidOffset(in: bytes) {
            throw invalidUTF8Error(in: bytes, at: invalid)
        }
        var parser = Parser(bytes: bytes)
        return try parser.parseDocument()
    }

    private static func invalidUTF8Error(in bytes: [UInt8], at offset: Int) -> TOMLError {
        var line = 1
        var column = 1
        let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
        var index = hasBOM ? 3 : 0
        while index < offset {
            if bytes[index] == ASCII.lineFeed {
                line += 1
                column = 1
            } else if bytes[index] & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        let byte = "byte 0x" + hexDigits(bytes[offset], uppercase: true)
        return TOMLError("invalid UTF-8 (\(byte)); a TOML document must be encoded in UTF-8", at: SourcePosition(line: line, column: column))
    }
}
