/// Integers (decimal, 0x, 0o, 0b) and floats (including inf and nan).
///
/// The whole token is taken first — everything that could belong to a number
/// — and then checked against the grammar, so that "1.2.3" or "0x" is
/// reported as one bad number rather than as a good number followed by junk.
extension Parser {
    mutating func parseNumber() throws(TOMLError) -> TOMLValueKind {
        let start = scanner.offset
        while let byte = scanner.current, isNumberTokenByte(byte) {
            scanner.advance()
        }
        var reader = NumberReader(bytes: scanner.bytes, start: start, end: scanner.offset)
        do {
            return try reader.read()
        } catch {
            let token = String(decoding: scanner.bytes[start..<scanner.offset], as: UTF8.self)
            throw scanner.error("invalid number \(token): \(error.reason)", at: error.offset)
        }
    }

    private func isNumberTokenByte(_ byte: UInt8) -> Bool {
        ASCII.isDigit(byte) || ASCII.isLetter(byte) || byte == ASCII.underscore
            || byte == ASCII.dot || byte == ASCII.plus || byte == ASCII.minus
    }
}

/// Why a number token is invalid and which byte of it is at fault.
struct NumberSyntaxError: Error {
    var reason: String
    var offset: Int
}

/// Checks and converts one number token `bytes[start..<end]`.
struct NumberReader {
    let bytes: [UInt8]
    let start: Int
    let end: Int
    var index: Int

    init(bytes: [UInt8], start: Int, end: Int) {
        self.bytes = bytes
        self.start = start
        self.end = end
        self.index = start
    }

    private var current: UInt8? { index < end ? bytes[index] : nil }

    private func fail(_ reason: String, at offset: Int? = nil) -> NumberSyntaxError {
        NumberSyntaxError(reason: reason, offset: min(offset ?? index, end))
    }

    mutating func read() throws(NumberSyntaxError) -> TOMLValueKind {
        var negative = false
        let hasSign = current == ASCII.plus || current == ASCII.minus
        if hasSign {
            negative = current == ASCII.minus
            index += 1
        }
        guard let first = current else {
            throw fail("a sign must be followed by digits, inf or nan")
        }
        if matches("inf") { return .float(negative ? -.infinity : .infinity) }
        if matches("nan") { return .float(negative ? -.nan : .nan) }

        if first == UInt8(ascii: "0"), let prefix = index + 1 < end ? bytes[index + 1] : nil, ASCII.isLetter(prefix),
           prefix != UInt8(ascii: "e"), prefix != UInt8(ascii: "E") {
            return .integer(try readPrefixed(prefix: prefix, hasSign: hasSign))
        }
        return try readDecimal(negative: negative)
    }

    /// Whether the rest of the token is exactly `word`.
    private func matches(_ word: String) -> Bool {
        bytes[index..<end].elementsEqual(word.utf8)
    }

    /// 0x, 0o and 0b integers: no sign, leading zeros allowed.
    private mutating func readPrefixed(prefix: UInt8, hasSign: Bool) throws(NumberSyntaxError) -> Int64 {
        let radix: UInt64
        let name: String
        switch prefix {
        case UInt8(ascii: "x"): radix = 16; name = "hexadecimal"
        case UInt8(ascii: "o"): radix = 8; name = "octal"
        case UInt8(ascii: "b"): radix = 2; name = "binary"
        case UInt8(ascii: "X"), UInt8(ascii: "O"), UInt8(ascii: "B"):
            throw fail("the prefix must be lower case (0x, 0o or 0b)", at: index + 1)
        default:
            throw fail("unexpected '\(Character(Unicode.Scalar(prefix)))' after 0 (prefixes are 0x, 0o and 0b; decimal numbers cannot start with 0)", at: index + 1)
        }
        if hasSign {
            throw fail("\(name) integers cannot have a sign", at: start)
        }
        index += 2
        guard current != nil else {
            throw fail("expected \(name) digits after 0\(Character(Unicode.Scalar(prefix)))")
        }
        var magnitude: UInt64 = 0
        var previousWasDigit = false
        while let byte = current {
            if byte == ASCII.underscore {
                guard previousWasDigit, index + 1 < end, digitValue(bytes[index + 1], radix: radix) != nil else {
                    throw fail("an underscore must be between two digits")
                }
                previousWasDigit = false
                index += 1
                continue
            }
            guard let digit = digitValue(byte, radix: radix) else {
                throw fail("'\(Character(Unicode.Scalar(byte)))' is not a valid \(name) digit")
            }
            let (shifted, overflow1) = magnitude.multipliedReportingOverflow(by: radix)
            let (sum, overflow2) = shifted.addingReportingOverflow(digit)
            guard !overflow1, !overflow2, sum <= UInt64(Int64.max) else {
                throw fail("it does not fit in a 64-bit signed integer (the largest is 0x7FFFFFFFFFFFFFFF)", at: start)
            }
            magnitude = sum
            previousWasDigit = true
            index += 1
        }
        return Int64(magnitude)
    }

    private func digitValue(_ byte: UInt8, radix: UInt64) -> UInt64? {
        guard let value = ASCII.hexValue(byte), UInt64(value) < radix else { return nil }
        return UInt64(value)
    }

    /// Decimal integers and floats: `[sign] int [. digits] [e [sign] digits]`.
    private mutating func readDecimal(negative: Bool) throws(NumberSyntaxError) -> TOMLValueKind {
        let integerStart = index
        let integerDigits = try readDigitRun(what: "the number")
        if integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0") {
            throw fail("leading zeros are not allowed", at: integerStart)
        }
        var isFloat = false
        if current == ASCII.dot {
            isFloat = true
            index += 1
            _ = try readDigitRun(what: "the decimal point")
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isFloat = true
            index += 1
            if current == ASCII.plus || current == ASCII.minus { index += 1 }
            _ = try readDigitRun(what: "the exponent")
        }
        if let byte = current {
            if byte == ASCII.dot {
                throw fail("a number can only have one decimal point")
            }
            throw fail("unexpected '\(Character(Unicode.Scalar(byte)))'")
        }
        return isFloat ? .float(try makeFloat()) : .integer(try makeInteger(from: integerStart, negative: negative))
    }

    /// Digits with single underscores between them; returns the digit count.
    private mutating func readDigitRun(what: String) throws(NumberSyntaxError) -> Int {
        guard let first = current, ASCII.isDigit(first) else {
            if current == ASCII.underscore {
                throw fail("an underscore must be between two digits")
            }
            throw fail(what == "the number" ? "expected a digit" : "expected a digit after \(what)")
        }
        var count = 0
        while let byte = current {
            if ASCII.isDigit(byte) {
                count += 1
                index += 1
            } else if byte == ASCII.underscore {
                guard index + 1 < end, ASCII.isDigit(bytes[index + 1]) else {
                    throw fail("an underscore must be between two digits")
                }
                index += 1
            } else {
                break
            }
        }
        return count
    }

    private func makeInteger(from digitsStart: Int, negative: Bool) throws(NumberSyntaxError) -> Int64 {
        // Accumulating towards the sign of the result lets Int64.min through.
        var value: Int64 = 0
        for offset in digitsStart..<end where bytes[offset] != ASCII.underscore {
            let digit = Int64(bytes[offset] - UInt8(ascii: "0"))
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else {
                throw fail("it does not fit in a 64-bit signed integer (-9223372036854775808 to 9223372036854775807)", at: start)
            }
            value = next
        }
        return value
    }

    private func makeFloat() throws(NumberSyntaxError) -> Double {
        var text = ""
        text.reserveCapacity(end - start)
        for offset in start..<end where bytes[offset] != ASCII.underscore {
            text.unicodeScalars.append(Unicode.Scalar(bytes[offset]))
        }
        // The grammar was checked above, so only a conversion failure is left;
        // values beyond Double's range become infinities, as with strtod.
        guard let value = Double(text) else {
            throw fail("it cannot be represented as a 64-bit float", at: start)
        }
        return value
    }
}
