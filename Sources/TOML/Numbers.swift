import Glibc

/// Integers, floats, booleans and date-times: everything that is not a string, array or
/// inline table.
extension Scanner {
    mutating func parseBareValue() throws(TOMLError) -> TOMLValueKind {
        if looking(at: "true") { advance(4); return .boolean(true) }
        if looking(at: "false") { advance(5); return .boolean(false) }
        if let dateTime = try parseDateTime() { return .dateTime(dateTime) }
        for (text, value) in [("inf", Double.infinity), ("+inf", .infinity), ("-inf", -.infinity),
                              ("nan", Double.nan), ("+nan", .nan), ("-nan", -Double.nan)] where looking(at: text) {
            advance(text.utf8.count)
            return .float(value)
        }
        return try parseNumber()
    }

    private func digit(_ offset: Int) -> Int? {
        guard let byte = peek(offset), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        return Int(byte - UInt8(ascii: "0"))
    }

    private func digits(_ offset: Int, _ count: Int) -> Int? {
        var value = 0
        for i in 0..<count {
            guard let d = digit(offset + i) else { return nil }
            value = value * 10 + d
        }
        return value
    }

    /// RFC 3339 as TOML 1.0 allows it: date, date-time (T, t or one space), time (with seconds).
    private mutating func parseDateTime() throws(TOMLError) -> TOMLDateTime? {
        let start = position, startIndex = index
        var result = TOMLDateTime(date: nil, time: nil, offsetMinutes: nil, text: "")
        var offset = 0
        if let year = digits(0, 4), peek(4) == UInt8(ascii: "-"), let month = digits(5, 2), peek(7) == UInt8(ascii: "-"), let day = digits(8, 2) {
            guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else {
                throw TOMLError("invalid date \(String(decoding: bytes[index..<index + 10], as: UTF8.self))", at: start)
            }
            result.date = .init(year: year, month: month, day: day)
            offset = 10
            let separator = peek(offset)
            if separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t") || (separator == 0x20 && digit(offset + 1) != nil) {
                offset += 1
            } else {
                advance(offset)
                result.text = String(decoding: bytes[startIndex..<index], as: UTF8.self)
                return result
            }
        }
        guard let hour = digits(offset, 2), peek(offset + 2) == UInt8(ascii: ":"), let minute = digits(offset + 3, 2) else {
            if result.date != nil { throw TOMLError("expected a time after the date", at: start) }
            return nil
        }
        guard peek(offset + 5) == UInt8(ascii: ":"), let second = digits(offset + 6, 2) else {
            throw TOMLError("a time needs seconds (HH:MM:SS)", at: start)
        }
        guard hour <= 23, minute <= 59, second <= 59 else { throw TOMLError("invalid time", at: start) }
        offset += 8
        var nanosecond = 0
        if peek(offset) == UInt8(ascii: ".") {
            offset += 1
            var count = 0
            while let d = digit(offset) {
                if count < 9 { nanosecond = nanosecond * 10 + d }
                count += 1
                offset += 1
            }
            guard count > 0 else { throw TOMLError("expected digits after the decimal point of the seconds", at: start) }
            for _ in min(count, 9)..<9 { nanosecond *= 10 }
        }
        result.time = .init(hour: hour, minute: minute, second: second, nanosecond: nanosecond)
        if result.date != nil {
            if peek(offset) == UInt8(ascii: "Z") || peek(offset) == UInt8(ascii: "z") {
                result.offsetMinutes = 0
                offset += 1
            } else if let sign = peek(offset), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-"),
                      let h = digits(offset + 1, 2), peek(offset + 3) == UInt8(ascii: ":"), let m = digits(offset + 4, 2) {
                guard h <= 23, m <= 59 else { throw TOMLError("invalid time zone offset", at: start) }
                result.offsetMinutes = (sign == UInt8(ascii: "-") ? -1 : 1) * (h * 60 + m)
                offset += 6
            }
        }
        advance(offset)
        result.text = String(decoding: bytes[startIndex..<index], as: UTF8.self)
        return result
    }

    private func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Digits with single underscores between them; returns the digits without them.
    private mutating func digitRun(_ isDigit: (UInt8) -> Bool) throws(TOMLError) -> [UInt8]? {
        guard let first = current, isDigit(first) else { return nil }
        var out: [UInt8] = [first]
        advance()
        while let byte = current {
            if isDigit(byte) {
                out.append(byte)
                advance()
            } else if byte == UInt8(ascii: "_"), let next = peek(1), isDigit(next) {
                advance()
            } else if byte == UInt8(ascii: "_") {
                throw error("an underscore in a number must stand between two digits")
            } else {
                break
            }
        }
        return out
    }

    private mutating func parseNumber() throws(TOMLError) -> TOMLValueKind {
        let start = position
        let isDecimal: (UInt8) -> Bool = { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        if current == UInt8(ascii: "0"), let kind = peek(1), kind == UInt8(ascii: "x") || kind == UInt8(ascii: "o") || kind == UInt8(ascii: "b") {
            advance(2)
            let radix = kind == UInt8(ascii: "x") ? 16 : kind == UInt8(ascii: "o") ? 8 : 2
            let valid: (UInt8) -> Bool = { byte in hexValue(byte).map { Int($0) < radix } ?? false }
            guard let run = try digitRun(valid) else { throw TOMLError("expected digits after 0\(Character(Unicode.Scalar(kind)))", at: start) }
            guard let value = Int64(String(decoding: run, as: UTF8.self), radix: radix) else {
                throw TOMLError("integer does not fit in 64 bits", at: start)
            }
            return .integer(value)
        }
        var text: [UInt8] = []
        if let sign = current, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            text.append(sign)
            advance()
        }
        guard let integer = try digitRun(isDecimal) else { throw TOMLError("expected a value", at: start) }
        if integer.count > 1 && integer.first == UInt8(ascii: "0") { throw TOMLError("leading zeros are not allowed in a number", at: start) }
        text += integer
        var isFloat = false
        if current == UInt8(ascii: "."), let next = peek(1), isDecimal(next) {
            advance()
            isFloat = true
            text.append(UInt8(ascii: "."))
            text += try digitRun(isDecimal) ?? []
        } else if current == UInt8(ascii: ".") {
            throw error("expected digits after the decimal point")
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            advance()
            isFloat = true
            text.append(UInt8(ascii: "e"))
            if let sign = current, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                text.append(sign)
                advance()
            }
            guard let exponent = try digitRun(isDecimal) else { throw error("expected digits in the exponent") }
            text += exponent
        }
        let literal = String(decoding: text, as: UTF8.self)
        if isFloat {
            guard let value = Double(literal) else { throw TOMLError("invalid float \(literal)", at: start) }
            return .float(value)
        }
        guard let value = Int64(literal) else { throw TOMLError("integer \(literal) does not fit in 64 bits", at: start) }
        return .integer(value)
    }
}
