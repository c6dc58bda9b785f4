import Testing
import TOML

@Suite struct NumberTests {
    private func value(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> TOMLValue? {
        try parseValid("v = " + text, sourceLocation: sourceLocation)["v"]
    }

    @Test(arguments: [
        ("0", 0), ("+0", 0), ("-0", 0), ("42", 42), ("+99", 99), ("-17", -17),
        ("1_000", 1000), ("5_349_221", 5_349_221), ("1_2_3", 123),
        ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min),
        ("0xDEADBEEF", 0xDEAD_BEEF), ("0xdead_beef", 0xDEAD_BEEF), ("0x0001", 1), ("0x7FFFFFFFFFFFFFFF", Int64.max),
        ("0o755", 0o755), ("0o0", 0), ("0o777777777777777777777", Int64.max),
        ("0b1101", 13), ("0b0000_0001", 1),
    ] as [(String, Int64)])
    func integers(text: String, expected: Int64) throws {
        #expect(try value(text)?.integer == expected)
        #expect(try value(text)?.typeName == "integer")
    }

    @Test(arguments: [
        ("1.0", 1.0), ("+1.0", 1.0), ("3.1415", 3.1415), ("-0.01", -0.01), ("5e+22", 5e22), ("1e06", 1e6),
        ("-2E-2", -2e-2), ("6.626e-34", 6.626e-34), ("224_617.445_991_228", 224_617.445_991_228),
        ("1e1_0", 1e10), ("0e0", 0), ("1.7976931348623157e308", 1.7976931348623157e308), ("5e-324", Double.leastNonzeroMagnitude),
        ("0.1", 0.1), ("1e400", .infinity), ("-1e400", -.infinity), ("1e-400", 0),
        ("inf", .infinity), ("+inf", .infinity), ("-inf", -.infinity),
    ] as [(String, Double)])
    func floats(text: String, expected: Double) throws {
        let parsed = try #require(try value(text)?.float)
        #expect(parsed == expected)
        #expect(try value(text)?.typeName == "float")
    }

    @Test func signedZeroAndNaN() throws {
        #expect(try value("-0.0")?.float?.sign == .minus)
        #expect(try value("+0.0")?.float?.sign == .plus)
        for text in ["nan", "+nan", "-nan"] {
            #expect(try value(text)?.float?.isNaN == true)
        }
        #expect(try value("-nan")?.float?.sign == .minus)
    }

    @Test func integersAreNotFloats() throws {
        #expect(try value("1")?.float == nil)
        #expect(try value("1.0")?.integer == nil)
    }

    @Test func integerErrors() {
        expectError("v = 0123", at: 1, 5, "invalid number 0123: leading zeros are not allowed")
        expectError("v = 1__0", at: 1, 6, "an underscore must be between two digits")
        expectError("v = 10_", at: 1, 7, "an underscore must be between two digits")
        expectError("v = +0x1", at: 1, 5, "hexadecimal integers cannot have a sign")
        expectError("v = 0X1", at: 1, 6, "the prefix must be lower case")
        expectError("v = 0b102", at: 1, 9, "'2' is not a valid binary digit")
        expectError("v = 9223372036854775808", at: 1, 5, "does not fit in a 64-bit signed integer")
        expectError("v = -9223372036854775809", at: 1, 5, "does not fit in a 64-bit signed integer")
        expectError("v = 0xFFFFFFFFFFFFFFFF", at: 1, 5, "does not fit in a 64-bit signed integer")
        expectError("v = 0x1_0000_0000_0000_0000", at: 1, 5, "does not fit")
    }

    @Test func floatErrors() {
        expectError("v = 1.", at: 1, 7, "expected a digit after the decimal point")
        expectError("v = .5", at: 1, 5, "expected a value")
        expectError("v = 1e", at: 1, 7, "expected a digit after the exponent")
        expectError("v = 1.e1", at: 1, 7, "expected a digit after the decimal point")
        expectError("v = 1._5", at: 1, 7, "an underscore must be between two digits")
        expectError("v = 03.14", at: 1, 5, "leading zeros are not allowed")
        expectError("v = 1.2.3", at: 1, 8, "a number can only have one decimal point")
        expectError("v = NaN", at: 1, 5, "special floats are written in lower case")
        expectError("v = infinity", at: 1, 5, "strings must be quoted")
    }

    @Test func valueFollowedByJunk() {
        expectError("v = 12 34", at: 1, 8, "expected the end of the line after a value, found '3'")
        expectError("v = [1 2]", at: 1, 8, "expected ',' or ']' after an array element, found '2'")
        expectError("v = {a = 1 b = 2}", at: 1, 12, "expected ',' or '}' after a value in an inline table, found 'b'")
    }
}
