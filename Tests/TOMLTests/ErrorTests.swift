import Testing
import TOML

@Suite struct ErrorTests {
    @Test func descriptions() {
        let error = TOMLError("duplicate key \"tunnel\" (first defined at line 3)", at: pos(7, 1))
        #expect(error.description == "line 7, column 1: duplicate key \"tunnel\" (first defined at line 3)")
        #expect(error.description(file: "/etc/vpnexec/policy.toml") == "/etc/vpnexec/policy.toml:7:1: duplicate key \"tunnel\" (first defined at line 3)")
        #expect(error.line == 7 && error.column == 1)
    }

    @Test func messagesForCommonMistakes() {
        expectError("users \"alice\"", at: 1, 7, #"expected '=' after key "users""#)
        expectError("my key = 1", at: 1, 4, "a key containing spaces must be quoted")
        expectError("a = yes", at: 1, 5, #"strings must be quoted ("yes")"#)
        expectError("a = True", at: 1, 5, "booleans are written in lower case")
        expectError("a =\n", at: 1, 4, "expected a value, found the end of the line")
        expectError("a = [1,\nb = 2", at: 2, 1, "expected ']' to close the array opened at line 1, column 5")
        expectError("a = {b = 1,\nc = 2}", at: 1, 12, "an inline table must be written on a single line")
        expectError("a = {b = 1,}", at: 1, 12, "a trailing comma is not allowed in an inline table")
        expectError("[a", at: 1, 3, "expected ']' to close the table header [a]")
        expectError("[[a]", at: 1, 5, "expected ']]'")
        expectError("[a] x", at: 1, 5, "expected the end of the line after the header [a]")
        expectError("a = 1\rb = 2", at: 1, 6, "carriage return")
        expectError("# \u{7F}", at: 1, 3, "control character U+007F is not allowed in a comment")
        expectError("é = 1", at: 1, 1, "unquoted keys may only contain")
    }

    @Test func invalidUTF8NamesLineAndColumn() {
        let error = parseError(Array("a = 1\nb = \"é".utf8) + [0xFF, 0x22])
        #expect(error?.position == pos(2, 7))
        #expect(error?.message.contains("invalid UTF-8 (byte 0xFF)") == true)
        #expect(parseError([0xC3])?.position == pos(1, 1))
        #expect(parseError([0xEF, 0xBB, 0xBF, 0x80])?.position == pos(1, 1))
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let depth = 10_000
        expectError("a = " + String(repeating: "[", count: depth), at: 1, 4 + TOML.maximumNestingDepth + 1, "nested too deeply")
        expectError("a = " + String(repeating: "{b=", count: depth), at: 1, 4 + 3 * TOML.maximumNestingDepth + 1, "nested too deeply")
        let dotted = (0..<depth).map { _ in "k" }.joined(separator: ".")
        expectError(dotted + " = 1", at: 1, 2 * TOML.maximumNestingDepth + 1, "nested too deeply")
        expectError("[" + dotted + "]", at: 1, 2 * TOML.maximumNestingDepth + 2, "nested too deeply")
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let limit = TOML.maximumNestingDepth
        var value = try #require(try parseValid("a = " + String(repeating: "[", count: limit) + String(repeating: "]", count: limit))["a"])
        for _ in 1..<limit {
            value = try #require(value.array?.first)
        }
        #expect(value.array?.isEmpty == true)
        let dotted = (0..<limit).map { _ in "k" }.joined(separator: ".")
        #expect(try parseValid(dotted + " = 1").count == 1)
    }

    /// Arbitrary bytes, biased towards TOML's punctuation, must never crash
    /// the parser; every failure must carry a sane position.
    @Test func randomBytesNeverCrash() {
        var rng = SplitMix64(seed: 99)
        let alphabet = Array("[]{}\"'=.,#\\\n\r\t 0123456789abcdefxobtrueinf+-_:TZ".utf8) + [0x00, 0x7F, 0xC3, 0xA9, 0xFF, 0xE2, 0x80]
        for _ in 0..<5000 {
            let length = Int.random(in: 0...60, using: &rng)
            let bytes = (0..<length).map { _ in
                Bool.random(using: &rng) ? alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] : UInt8.random(in: 0...255, using: &rng)
            }
            do {
                _ = try TOML.parse(bytes)
            } catch {
                let lines = bytes.filter { $0 == 0x0A }.count + 1
                #expect(error.position.line >= 1 && error.position.line <= lines, "\(error) for «\(escapedForMessage(bytes))»")
                #expect(error.position.column >= 1 && error.position.column <= bytes.count + 1, "\(error) for «\(escapedForMessage(bytes))»")
                #expect(!error.message.isEmpty)
            }
        }
    }
}
