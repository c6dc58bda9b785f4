/// TOML v1.0.0 (https://toml.io/en/v1.0.0) with a source position for every key and value.
public enum TOML {
    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        try parse(bytes: Array(text.utf8))
    }

    public static func parse(bytes: [UInt8]) throws(TOMLError) -> TOMLTable {
        if let bad = invalidUTF8Line(bytes) {
            throw TOMLError("the document is not valid UTF-8", at: SourcePosition(line: bad, column: 1))
        }
        var parser = DocumentParser(scanner: Scanner(bytes))
        return try parser.parse()
    }

    static func invalidUTF8Line(_ bytes: [UInt8]) -> Int? {
        var line = 1
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case let .scalarValue(scalar):
                if scalar == "\n" { line += 1 }
            case .emptyInput:
                return nil
            case .error:
                return line
            }
        }
    }
}

struct DocumentParser {
    var scanner: Scanner
    let root = MutableTable(position: SourcePosition(line: 1, column: 1))
    var flags = NamespaceFlags()
    /// The table that key/value lines go into: the last header's path.
    var header: [KeyPart] = []

    init(scanner: Scanner) {
        self.scanner = scanner
    }

    mutating func parse() throws(TOMLError) -> TOMLTable {
        while true {
            scanner.skipWhitespace()
            guard let byte = scanner.current else { break }
            if byte == UInt8(ascii: "[") {
                try parseHeader()
            } else if byte != UInt8(ascii: "#") && byte != 0x0A && byte != 0x0D {
                try parseKeyValueLine()
            }
            scanner.skipWhitespace()
            try scanner.skipComment()
            if !scanner.atEnd, !(try scanner.skipNewline()) {
                throw scanner.error("expected the end of the line, found \(describeCurrent())")
            }
        }
        return root.freeze()
    }

    func describeCurrent() -> String {
        guard let byte = scanner.current else { return "the end of the document" }
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return scanner.describe(byte)
    }

    // MARK: headers

    private mutating func parseHeader() throws(TOMLError) {
        let start = scanner.position
        let isArray = scanner.peek(1) == UInt8(ascii: "[")
        scanner.advance(isArray ? 2 : 1)
        scanner.skipWhitespace()
        let key = try parseKey()
        scanner.skipWhitespace()
        let closing = isArray ? "]]" : "]"
        guard scanner.looking(at: closing) else {
            throw scanner.error("expected '\(closing)' to close the \(isArray ? "array of tables" : "table") header")
        }
        scanner.advance(closing.utf8.count)
        flags.finalizePending()
        let path = key.map(\.name)
        let shown = "[" + (isArray ? "[" : "") + path.joined(separator: ".") + closing
        if isArray {
            guard !flags.isSet(path, .frozen) else {
                throw TOMLError("\(shown): \(path.joined(separator: ".")) was defined by a value and cannot be extended", at: start)
            }
            flags.unsetAll(path)
            flags.set(path, .explicit, recursive: false)
            let parent = try root.nest(Array(key.dropLast()))
            let stem = key[key.count - 1]
            let table = MutableTable(position: start)
            if let slot = parent.slots[stem.name] {
                guard case let .tableArray(tables, position) = slot.node else {
                    throw TOMLError("\(shown): \(path.joined(separator: ".")) is already defined as something else (at \(slot.keyPosition))", at: start)
                }
                parent.slots[stem.name]?.node = .tableArray(tables + [table], position)
            } else {
                parent.insert(stem.name, at: stem.position, .tableArray([table], start))
            }
        } else {
            guard !flags.isSet(path, .explicit) && !flags.isSet(path, .frozen) else {
                throw TOMLError("table \(shown) is defined twice\(firstDefinition(path))", at: start)
            }
            flags.set(path, .explicit, recursive: false)
            let table = try root.nest(key)
            table.position = start
        }
        header = key
    }

    private func firstDefinition(_ path: [String]) -> String {
        var table = root
        for (offset, key) in path.enumerated() {
            guard let slot = table.slots[key] else { return "" }
            if offset == path.count - 1 {
                if case let .table(inner) = slot.node { return " (first at \(inner.position))" }
                return " (first at \(slot.keyPosition))"
            }
            switch slot.node {
            case let .table(inner): table = inner
            case let .tableArray(tables, _): table = tables[tables.count - 1]
            case .value: return ""
            }
        }
        return ""
    }

    // MARK: keys and values

    private mutating func parseKey() throws(TOMLError) -> [KeyPart] {
        var parts: [KeyPart] = []
        while true {
            let position = scanner.position
            guard let byte = scanner.current else { throw scanner.error("expected a key") }
            let name: String
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                if scanner.looking(at: "\"\"\"") || scanner.looking(at: "'''") {
                    throw scanner.error("a key cannot be a multi-line string")
                }
                name = try scanner.parseString()
            } else {
                var bytes: [UInt8] = []
                while let c = scanner.current, Self.isBareKeyByte(c) {
                    bytes.append(c)
                    scanner.advance()
                }
                guard !bytes.isEmpty else { throw scanner.error("expected a key, found \(describeCurrent())") }
                name = String(decoding: bytes, as: UTF8.self)
            }
            parts.append(KeyPart(name: name, position: position))
            scanner.skipWhitespace()
            guard scanner.current == UInt8(ascii: ".") else { return parts }
            scanner.advance()
            scanner.skipWhitespace()
        }
    }

    static func isBareKeyByte(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
    }

    private mutating func parseKeyValue() throws(TOMLError) -> ([KeyPart], TOMLValue) {
        let key = try parseKey()
        guard scanner.current == UInt8(ascii: "=") else {
            throw scanner.error("expected '=' after the key \"\(key.map(\.name).joined(separator: "."))\", found \(describeCurrent())")
        }
        scanner.advance()
        scanner.skipWhitespace()
        return (key, try parseValue())
    }

    private mutating func parseKeyValueLine() throws(TOMLError) {
        let (key, value) = try parseKeyValue()
        let headerPath = header.map(\.name)
        let path = key.map(\.name)
        for length in 1..<max(key.count, 1) {
            let container = headerPath + path.prefix(length)
            if flags.isSet(container, .explicit) {
                throw TOMLError("cannot add to table \(container.joined(separator: ".")) with a dotted key: it is defined elsewhere", at: key[length - 1].position)
            }
            flags.addPending(container, .explicit)
        }
        if flags.isSet(headerPath + path.dropLast(), .frozen) {
            throw TOMLError("cannot add to \((headerPath + path.dropLast()).joined(separator: ".")): it was defined by an inline table or array", at: key[0].position)
        }
        let table = try root.nest(header + key.dropLast())
        let stem = key[key.count - 1]
        if let existing = table.slots[stem.name] {
            throw TOMLError("duplicate key \"\(stem.name)\" (first defined at \(existing.keyPosition))", at: stem.position)
        }
        switch value.kind {
        case .table, .array: flags.set(headerPath + path, .frozen, recursive: true)
        default: break
        }
        table.insert(stem.name, at: stem.position, .value(value))
    }

    private mutating func parseValue() throws(TOMLError) -> TOMLValue {
        let position = scanner.position
        guard let byte = scanner.current else { throw scanner.error("expected a value") }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            return TOMLValue(.string(try scanner.parseString()), at: position)
        case UInt8(ascii: "["):
            return try parseArray()
        case UInt8(ascii: "{"):
            return try parseInlineTable()
        default:
            return TOMLValue(try scanner.parseBareValue(), at: position)
        }
    }

    private mutating func parseArray() throws(TOMLError) -> TOMLValue {
        let position = scanner.position
        scanner.advance()
        var items: [TOMLValue] = []
        while true {
            try scanner.skipBlank()
            if scanner.current == UInt8(ascii: "]") { break }
            items.append(try parseValue())
            try scanner.skipBlank()
            if scanner.current == UInt8(ascii: ",") {
                scanner.advance()
                continue
            }
            guard scanner.current == UInt8(ascii: "]") else {
                throw scanner.error("expected ',' or ']' in the array, found \(describeCurrent())")
            }
            break
        }
        scanner.advance()
        return TOMLValue(.array(items), at: position)
    }

    private mutating func parseInlineTable() throws(TOMLError) -> TOMLValue {
        let position = scanner.position
        scanner.advance()
        let table = MutableTable(position: position)
        let inlineFlags = NamespaceFlags()
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "}") {
            scanner.advance()
            return TOMLValue(.table(table.freeze()), at: position)
        }
        while true {
            scanner.skipWhitespace()
            let (key, value) = try parseKeyValue()
            let path = key.map(\.name)
            if inlineFlags.isSet(path, .frozen) {
                throw TOMLError("cannot add to \(path.dropLast().joined(separator: ".")): it was defined by an inline table or array", at: key[0].position)
            }
            let parent = try table.nest(Array(key.dropLast()), accessArrays: false)
            let stem = key[key.count - 1]
            if let existing = parent.slots[stem.name] {
                throw TOMLError("duplicate key \"\(stem.name)\" (first defined at \(existing.keyPosition))", at: stem.position)
            }
            parent.insert(stem.name, at: stem.position, .value(value))
            switch value.kind {
            case .table, .array: inlineFlags.set(path, .frozen, recursive: true)
            default: break
            }
            scanner.skipWhitespace()
            if scanner.current == UInt8(ascii: ",") {
                scanner.advance()
                scanner.skipWhitespace()
                if scanner.current == UInt8(ascii: "}") { throw scanner.error("trailing comma in an inline table") }
                continue
            }
            guard scanner.current == UInt8(ascii: "}") else {
                throw scanner.error("expected ',' or '}' in the inline table, found \(describeCurrent())")
            }
            scanner.advance()
            return TOMLValue(.table(table.freeze()), at: position)
        }
    }
}
