import Testing
import TOML

@Suite struct StringTests {
    private func string(_ value: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String? {
        try parseValid("v = " + value, sourceLocation: sourceLocation)["v"]?.string
    }

    @Test func basicEscapes() throws {
        #expect(try string(#""a\tb\nc\"d\\e\bf\fg\rh""#) == "a\tb\nc\"d\\e\u{8}f\u{C}g\rh")
        #expect(try string(#""\u00E9\u00e9\U0001F600\U0010FFFF\u0000""#) == "éé😀\u{10FFFF}\u{0}")
        #expect(try string(#""\uD7FF\uE000""#) == "\u{D7FF}\u{E000}")
    }

    @Test func rawUnicodeAndTabsAreKept() throws {
        #expect(try string("\"é日🙂\ttab\"") == "é日🙂\ttab")
        #expect(try string("'\tC:\\Users\\x'") == "\tC:\\Users\\x")
    }

    @Test func literalStringsHaveNoEscapes() throws {
        #expect(try string(#"'\n\u0041\'"#) == #"\n\u0041\"#)
        #expect(try string(#"'Tom "Dubs"'"#) == #"Tom "Dubs""#)
    }

    @Test func emptyStrings() throws {
        #expect(try string(#""""#) == "")
        #expect(try string("''") == "")
        #expect(try string(#""""""""#) == "")
        #expect(try string("''''''") == "")
    }

    @Test func multilineBasicTrimsTheFirstNewlineOnly() throws {
        #expect(try string("\"\"\"\nline1\nline2\"\"\"") == "line1\nline2")
        #expect(try string("\"\"\"\n\nx\"\"\"") == "\nx")
        #expect(try string("\"\"\"x\n\"\"\"") == "x\n")
    }

    @Test func multilineCRLFBecomesLF() throws {
        #expect(try string("\"\"\"\r\na\r\nb\r\n\"\"\"") == "a\nb\n")
        #expect(try string("'''\r\na\r\nb'''") == "a\nb")
        // An escaped \r stays.
        #expect(try string("\"\"\"a\\r\nb\"\"\"") == "a\r\nb")
    }

    @Test func lineEndingBackslash() throws {
        #expect(try string("\"\"\"\nThe quick \\\n\n\n   brown \\\n  fox\"\"\"") == "The quick brown fox")
        #expect(try string("\"\"\"a \\  \t\n   b\"\"\"") == "a b")
        #expect(try string("\"\"\"a\\\r\n  \r\n  b\"\"\"") == "ab")
        #expect(try string("\"\"\"\\\n\"\"\"") == "")
        // An escaped backslash before a newline is just a backslash.
        #expect(try string("\"\"\"a\\\\\nb\"\"\"") == "a\\\nb")
    }

    @Test func quotesBeforeTheClosingDelimiter() throws {
        let q = "\""
        #expect(try string(q + q + q + "a" + q + q + q + q) == "a\"")
        #expect(try string(q + q + q + "a" + q + q + q + q + q) == "a\"\"")
        #expect(try string(String(repeating: q, count: 7)) == "\"")
        #expect(try string(String(repeating: q, count: 8)) == "\"\"")
        #expect(try string(q + q + q + "two " + q + q + " quotes" + q + q + q) == "two \"\" quotes")
        #expect(try string(q + q + q + "\\" + q + q + q + q) == "\"")
        #expect(try string("'''a''''") == "a'")
        #expect(try string("'''a'''''") == "a''")
        #expect(try string("'''It's'''") == "It's")
    }

    @Test func multilineLiteralKeepsEverything() throws {
        #expect(try string("'''\n  \\n  \"\"\"\n\ttab'''") == "  \\n  \"\"\"\n\ttab")
    }

    @Test func quotedKeysUseTheSameRules() throws {
        let table = try parseValid(#""a\tb" = 1"# + "\n'c\\d' = 2\n\"\" = 3\n\"\\u00e9\" = 4")
        #expect(table.keys == ["a\tb", "c\\d", "", "é"])
    }

    @Test func escapeErrors() {
        expectError(#"v = "\x41""#, at: 1, 6, #"invalid escape sequence \x"#)
        expectError(#"v = "\u12""#, at: 1, 6, "exactly 4 hexadecimal digits")
        expectError(#"v = "\U1234567""#, at: 1, 6, "exactly 8 hexadecimal digits")
        expectError(#"v = "\uDFFF""#, at: 1, 6, "U+DFFF is not a Unicode scalar value")
        expectError(#"v = "\U00110000""#, at: 1, 6, "U+110000 is not a Unicode scalar value")
        expectError("v = \"a\\\nb\"", at: 1, 7, "only allowed in a multi-line string")
        expectError("v = \"\"\"a\\ b\"\"\"", at: 1, 9, "a backslash followed by whitespace must end the line")
    }

    @Test func unterminatedStringsPointAtTheirStart() {
        expectError("v = \"abc\nw = 1", at: 1, 5, "unterminated string")
        expectError("v = 'abc", at: 1, 5, "unterminated string")
        expectError("x = 1\nv = \"\"\"\nabc\n\n", at: 2, 5, "unterminated multi-line string")
        expectError("v = '''abc''", at: 1, 5, "unterminated multi-line string")
    }

    @Test func controlCharacters() {
        expectError("v = \"a\u{1}\"", at: 1, 7, "control character U+0001 is not allowed in a string; write it as \\u0001")
        expectError("v = 'a\u{7F}'", at: 1, 7, "control character U+007F is not allowed in a literal string")
        expectError("v = \"\"\"\na\u{0}\"\"\"", at: 2, 2, "control character U+0000")
        expectError("v = \"a\rb\"", at: 1, 7, "carriage return (U+000D) must be followed by a line feed")
        expectError("v = \"\"\"a\rb\"\"\"", at: 1, 9, "carriage return")
    }

    @Test func tooManyQuotes() {
        expectError(#"v = """a""""""# + "\"", at: 1, 14, "too many quotes in a row")
    }
}
