/// A calendar date as written in the document (already checked to exist).
public struct TOMLDate: Hashable, Sendable {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }
}

/// A wall-clock time. Digits of the fraction past nanoseconds are truncated,
/// as the spec asks of implementations with less precision than the text.
public struct TOMLTime: Hashable, Sendable {
    public var hour: Int
    public var minute: Int
    public var second: Int
    public var nanosecond: Int

    public init(hour: Int, minute: Int, second: Int, nanosecond: Int = 0) {
        self.hour = hour
        self.minute = minute
        self.second = second
        self.nanosecond = nanosecond
    }
}

/// Any of TOML's four date-time types. They are kept as parts rather than
/// converted to an instant because three of the four are not instants, and
/// the original text is kept so a value can be echoed back exactly as the
/// admin wrote it.
public struct TOMLDateTime: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        case offsetDateTime
        case localDateTime
        case localDate
        case localTime
    }

    /// Absent for a local time.
    public var date: TOMLDate?
    /// Absent for a local date.
    public var time: TOMLTime?
    /// Minutes east of UTC; `Z` is 0. Absent for the three local kinds.
    public var offsetMinutes: Int?
    /// The value exactly as it appeared in the document.
    public var text: String

    public init(date: TOMLDate?, time: TOMLTime?, offsetMinutes: Int?, text: String) {
        self.date = date
        self.time = time
        self.offsetMinutes = offsetMinutes
        self.text = text
    }

    public var kind: Kind {
        switch (date, time, offsetMinutes) {
        case (.some, .some, .some): return .offsetDateTime
        case (.some, .some, .none): return .localDateTime
        case (.some, .none, _): return .localDate
        case (.none, _, _): return .localTime
        }
    }

    public var description: String { text }
}
