/// Offset date-times, local date-times, local dates and local times
/// (RFC 3339 with TOML's relaxations: a space may separate date and time,
/// and the parts may stand alone).
extension Parser {
    /// A value starting with digits is a date if it starts `DDDD-` and a time
    /// if it starts `DD:`; anything else with a leading digit is a number.
    func looksLikeDateOrTime() -> Bool {
        let digit = { (distance: Int) -> Bool in scanner.peek(distance).map(ASCII.isDigit) ?? false }
        if digit(0), digit(1), digit(2), digit(3), scanner.peek(4) == ASCII.minus { return true }
        if digit(0), digit(1), scanner.peek(2) == ASCII.colon { return true }
        return false
    }

    mutating func parseDateTime() throws(TOMLError) -> TOMLDateTime {
        let start = scanner.offset
        var date: TOMLDate?
        var time: TOMLTime?
        var offsetMinutes: Int?
        if scanner.peek(2) == ASCII.colon {
            time = try parseTime()
            if let byte = scanner.current, byte == UInt8(ascii: "Z") || byte == UInt8(ascii: "z") || byte == ASCII.plus || byte == ASCII.minus {
                throw scanner.error("a local time cannot have a UTC offset; give a date too for an offset date-time")
            }
        } else {
            date = try parseDate()
            let separator = scanner.current
            // A space only separates date and time when a time follows it;
            // otherwise the value is a local date and the space is just space.
            if separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t")
                || (separator == ASCII.space && scanner.peek(1).map(ASCII.isDigit) == true) {
                scanner.advance()
                time = try parseTime()
                offsetMinutes = try parseOffset()
            }
        }
        let text = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
        return TOMLDateTime(date: date, time: time, offsetMinutes: offsetMinutes, text: text)
    }

    /// `YYYY-MM-DD`, checked against the calendar.
    private mutating func parseDate() throws(TOMLError) -> TOMLDate {
        let start = scanner.offset
        let year = try readFixedDigits(4, what: "a four-digit year")
        try expectSeparator(ASCII.minus, in: "date")
        let month = try readFixedDigits(2, what: "a two-digit month")
        try expectSeparator(ASCII.minus, in: "date")
        let day = try readFixedDigits(2, what: "a two-digit day")
        let text = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
        guard (1...12).contains(month) else {
            throw scanner.error("invalid date \(text): the month must be between 01 and 12", at: start)
        }
        let days = Self.daysInMonth(month, year: year)
        guard day >= 1 && day <= days else {
            throw scanner.error("invalid date \(text): \(Self.monthNames[month - 1]) \(year) has \(days) days", at: start)
        }
        return TOMLDate(year: year, month: month, day: day)
    }

    /// `HH:MM:SS[.fraction]`. Seconds are required in TOML 1.0.
    private mutating func parseTime() throws(TOMLError) -> TOMLTime {
        let start = scanner.offset
        let hour = try readFixedDigits(2, what: "a two-digit hour")
        try expectSeparator(ASCII.colon, in: "time")
        let minute = try readFixedDigits(2, what: "a two-digit minute")
        guard scanner.current == ASCII.colon else {
            throw scanner.error("expected ':' and seconds in the time (TOML 1.0 requires HH:MM:SS), found \(scanner.describeCurrent())")
        }
        scanner.advance()
        let second = try readFixedDigits(2, what: "two-digit seconds")
        var nanosecond = 0
        if scanner.current == ASCII.dot {
            scanner.advance()
            guard let first = scanner.current, ASCII.isDigit(first) else {
                throw scanner.error("expected digits after the decimal point in the seconds, found \(scanner.describeCurrent())")
            }
            // Precision beyond nanoseconds is truncated, as the spec asks.
            var digits = 0
            while let byte = scanner.current, ASCII.isDigit(byte) {
                if digits < 9 {
                    nanosecond = nanosecond * 10 + Int(byte - UInt8(ascii: "0"))
                    digits += 1
                }
                scanner.advance()
            }
            for _ in digits..<9 { nanosecond *= 10 }
        }
        let text = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
        guard hour <= 23 else {
            throw scanner.error("invalid time \(text): the hour must be between 00 and 23", at: start)
        }
        guard minute <= 59 else {
            throw scanner.error("invalid time \(text): the minute must be between 00 and 59", at: start)
        }
        guard second <= 59 else {
            throw scanner.error("invalid time \(text): the seconds must be between 00 and 59", at: start)
        }
        return TOMLTime(hour: hour, minute: minute, second: second, nanosecond: nanosecond)
    }

    /// `Z`, `+HH:MM` or `-HH:MM` after a date and time; nil for a local date-time.
    private mutating func parseOffset() throws(TOMLError) -> Int? {
        guard let byte = scanner.current else { return nil }
        if byte == UInt8(ascii: "Z") || byte == UInt8(ascii: "z") {
            scanner.advance()
            return 0
        }
        guard byte == ASCII.plus || byte == ASCII.minus else { return nil }
        let start = scanner.offset
        scanner.advance()
        let hours = try readFixedDigits(2, what: "a two-digit hour in the UTC offset")
        try expectSeparator(ASCII.colon, in: "UTC offset")
        let minutes = try readFixedDigits(2, what: "two-digit minutes in the UTC offset")
        guard hours <= 23, minutes <= 59 else {
            let text = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
            throw scanner.error("invalid UTC offset \(text): hours must be 00-23 and minutes 00-59", at: start)
        }
        let total = hours * 60 + minutes
        return byte == ASCII.minus ? -total : total
    }

    private mutating func readFixedDigits(_ count: Int, what: String) throws(TOMLError) -> Int {
        var value = 0
        for index in 0..<count {
            guard let byte = scanner.peek(index), ASCII.isDigit(byte) else {
                throw scanner.error("expected \(what), found \(scanner.describe(at: scanner.offset + index))", at: scanner.offset + index)
            }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        scanner.advance(count)
        return value
    }

    private mutating func expectSeparator(_ separator: UInt8, in what: String) throws(TOMLError) {
        guard scanner.current == separator else {
            throw scanner.error("expected '\(Character(Unicode.Scalar(separator)))' in the \(what), found \(scanner.describeCurrent())")
        }
        scanner.advance()
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11:
            return 30
        default:
            return 31
        }
    }

    static let monthNames = [
        "January", "February", "March", "April", "May", "June",
        "July", "August", "September", "October", "November", "December",
    ]
}
