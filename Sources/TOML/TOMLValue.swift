/// What a value is, without where it is.
public enum TOMLValueKind: Sendable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    // Boxed so the common cases keep the enum small; a date-time carries its text.
    indirect case dateTime(TOMLDateTime)
    case array([TOMLValue])
    case table(TOMLTable)

    /// The name of the type as the TOML spec calls it, for messages such as
    /// `"mtu" must be an integer, not a string`.
    public var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .boolean: return "boolean"
        case .dateTime(let dateTime):
            switch dateTime.kind {
            case .offsetDateTime: return "offset date-time"
            case .localDateTime: return "local date-time"
            case .localDate: return "local date"
            case .localTime: return "local time"
            }
        case .array: return "array"
        case .table: return "table"
        }
    }

    /// `typeName` with its indefinite article ("an integer", "a string").
    public var typeNameWithArticle: String {
        let name = typeName
        let vowel = name.first.map { "aeiou".contains($0) } ?? false
        return (vowel ? "an " : "a ") + name
    }
}

/// A value and where it starts in the document: the opening quote of a string,
/// the first character of a number, the `[` of an array, the `{` of an inline
/// table. A table made by a `[header]` is at its `[`; one that only exists
/// because a longer key mentions it is at that key.
public struct TOMLValue: Sendable {
    public var kind: TOMLValueKind
    public var position: SourcePosition

    public init(_ kind: TOMLValueKind, at position: SourcePosition) {
        self.kind = kind
        self.position = position
    }

    public var typeName: String { kind.typeName }
    public var typeNameWithArticle: String { kind.typeNameWithArticle }

    public var string: String? {
        if case .string(let value) = kind { return value }
        return nil
    }

    public var integer: Int64? {
        if case .integer(let value) = kind { return value }
        return nil
    }

    /// Only a TOML float; an integer is not silently widened, so a consumer
    /// that wants to accept both must say so.
    public var float: Double? {
        if case .float(let value) = kind { return value }
        return nil
    }

    public var boolean: Bool? {
        if case .boolean(let value) = kind { return value }
        return nil
    }

    public var dateTime: TOMLDateTime? {
        if case .dateTime(let value) = kind { return value }
        return nil
    }

    public var array: [TOMLValue]? {
        if case .array(let value) = kind { return value }
        return nil
    }

    public var table: TOMLTable? {
        if case .table(let value) = kind { return value }
        return nil
    }
}
