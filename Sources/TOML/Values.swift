/// A position in a TOML document: 1-based line and column (columns count Unicode scalars).
public struct SourcePosition: Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "\(line):\(column)" }
}

public struct TOMLError: Error, Sendable, CustomStringConvertible {
    public var position: SourcePosition
    public var message: String

    public init(_ message: String, at position: SourcePosition) {
        self.message = message
        self.position = position
    }

    public var description: String { "\(position): \(message)" }
}

public indirect enum TOMLValueKind: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    case dateTime(TOMLDateTime)
    case array([TOMLValue])
    case table(TOMLTable)

    /// For messages: "string", "integer", "array"...
    public var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .boolean: return "boolean"
        case let .dateTime(value): return value.kindName
        case .array: return "array"
        case .table: return "table"
        }
    }
}

public struct TOMLValue: Sendable, Equatable {
    public var kind: TOMLValueKind
    public var position: SourcePosition

    public init(_ kind: TOMLValueKind, at position: SourcePosition) {
        self.kind = kind
        self.position = position
    }
}

/// A table with its keys in the order they were written, and where each key and value is.
public struct TOMLTable: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var key: String
        public var keyPosition: SourcePosition
        public var value: TOMLValue
    }

    public var entries: [Entry]
    /// Where the table was defined: its header, the key that created it, or its '{'.
    public var position: SourcePosition

    public init(entries: [Entry] = [], position: SourcePosition) {
        self.entries = entries
        self.position = position
    }

    public subscript(key: String) -> TOMLValue? {
        entries.first { $0.key == key }?.value
    }
}

/// Offset date-time, local date-time, local date or local time, as written.
public struct TOMLDateTime: Sendable, Equatable {
    public struct Date: Sendable, Equatable { public var year, month, day: Int }
    public struct Time: Sendable, Equatable { public var hour, minute, second, nanosecond: Int }

    public var date: Date?
    public var time: Time?
    /// Minutes east of UTC; nil for local values.
    public var offsetMinutes: Int?
    public var text: String

    public var kindName: String {
        switch (date != nil, time != nil, offsetMinutes != nil) {
        case (true, true, true): return "offset date-time"
        case (true, true, false): return "local date-time"
        case (true, false, _): return "local date"
        default: return "local time"
        }
    }
}
