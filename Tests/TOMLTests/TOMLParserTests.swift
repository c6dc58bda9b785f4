import Testing
import TOML

@Suite struct TOMLParserTests {
    @Test func positionsOfKeysValuesAndTables() throws {
        let doc = try TOML.parse("""
            # comment
            title = "x"

            [profile.work]
            tunnel.interface = "wg0"
            users = ["alice", 1001]
            """)
        #expect(doc.entries.map(\.key) == ["title", "profile"])
        #expect(doc.entries[0].keyPosition == SourcePosition(line: 2, column: 1))
        #expect(doc["title"]?.position == SourcePosition(line: 2, column: 9))
        let profile = try #require(doc["profile"])
        #expect(profile.position == SourcePosition(line: 4, column: 2), "implicit table: where its key was written")
        guard case let .table(profiles) = profile.kind, case let .table(work) = profiles["work"]?.kind else {
            Issue.record("expected tables"); return
        }
        #expect(work.position == SourcePosition(line: 4, column: 1), "header table: its header")
        #expect(profiles.entries[0].keyPosition == SourcePosition(line: 4, column: 10))
        guard case let .table(tunnel) = work["tunnel"]?.kind else { Issue.record("tunnel"); return }
        #expect(tunnel.position == SourcePosition(line: 5, column: 1))
        #expect(tunnel.entries[0].keyPosition == SourcePosition(line: 5, column: 8))
        #expect(tunnel["interface"]?.position == SourcePosition(line: 5, column: 20))
        guard case let .array(users) = work["users"]?.kind else { Issue.record("users"); return }
        #expect(users.map(\.position) == [SourcePosition(line: 6, column: 10), SourcePosition(line: 6, column: 19)])
        #expect(users.map(\.kind) == [.string("alice"), .integer(1001)])
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let doc = try TOML.parse("\"ключ\" = \"é\"\nx = 1")
        #expect(doc["ключ"]?.position == SourcePosition(line: 1, column: 10))
        #expect(doc["x"]?.position == SourcePosition(line: 2, column: 5))
    }

    @Test(arguments: [
        ("a = 1\nb = ", 2, 5, "expected a value"),
        ("[t]\n[t]", 2, 1, "table [t] is defined twice (first at 1:1)"),
        ("a = 1\na = 2", 2, 1, "duplicate key \"a\" (first defined at 1:1)"),
        ("a = \"x", 1, 7, "unterminated string"),
        ("a = 01", 1, 5, "leading zeros are not allowed in a number"),
        ("a = 1_", 1, 6, "an underscore in a number must stand between two digits"),
        ("a = 9223372036854775808", 1, 5, "integer 9223372036854775808 does not fit in 64 bits"),
        ("users \"a\"", 1, 7, "expected '=' after the key \"users\", found '\"'"),
        ("a = { b = 1, }", 1, 14, "trailing comma in an inline table"),
        ("a = \"\\q\"", 1, 6, "invalid escape sequence \\q"),
        ("a = 1979-02-30", 1, 5, "invalid date 1979-02-30"),
        ("a = 1 b = 2", 1, 7, "expected the end of the line, found 'b'"),
        ("a = {x = 1}\n[a]", 2, 1, "table [a] is defined twice (first at 1:1)"),
        ("[a]\nb.c = 1\n[a.b]", 3, 1, "table [a.b] is defined twice (first at 2:1)"),
        ("a = [1,2]\n[[a]]", 2, 1, "[[a]]: a was defined by a value and cannot be extended"),
    ])
    func errors(text: String, line: Int, column: Int, message: String) {
        do {
            _ = try TOML.parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.position == SourcePosition(line: line, column: column), "\(text)")
            #expect(error.message == message)
        }
    }

    /// Editors on some systems start files with a byte order mark; tomllib refuses it,
    /// we skip it (TOML files are UTF-8, where it carries no information).
    @Test func byteOrderMarkIsSkipped() throws {
        #expect(try TOML.parse("\u{FEFF}a = 1")["a"]?.kind == .integer(1))
    }

    @Test func invalidUTF8NamesTheLine() {
        #expect(throws: TOMLError.self) { try TOML.parse(bytes: Array("a = 1\nb = \"".utf8) + [0xFF, 0x22]) }
        do {
            _ = try TOML.parse(bytes: Array("a = 1\nb = \"".utf8) + [0xFF, 0x22])
        } catch {
            #expect(error.position.line == 2)
        }
    }

    @Test func valuesOfEveryKind() throws {
        let doc = try TOML.parse(#"""
            s = "tab\there \u00e9 \U0001F600"
            lit = 'C:\path'
            ml = """
            one \
              two"""
            mll = '''
            raw\n'''
            hex = 0xDEAD_beef
            oct = 0o755
            bin = 0b1010
            neg = -17
            f = -3.5e-2
            inf = -inf
            odt = 1979-05-27T07:32:00.999999-07:00
            ldt = 1979-05-27 07:32:00
            ld = 1979-05-27
            lt = 07:32:01.5
            arr = [ 1, "two", [3.0], {x = true}, ]
            [[points]]
            x = 1
            [[points]]
            x = 2
            """#)
        #expect(doc["s"]?.kind == .string("tab\there é 😀"))
        #expect(doc["lit"]?.kind == .string("C:\\path"))
        #expect(doc["ml"]?.kind == .string("one two"))
        #expect(doc["mll"]?.kind == .string("raw\\n"))
        #expect(doc["hex"]?.kind == .integer(0xDEADBEEF))
        #expect(doc["oct"]?.kind == .integer(0o755))
        #expect(doc["bin"]?.kind == .integer(10))
        #expect(doc["neg"]?.kind == .integer(-17))
        #expect(doc["f"]?.kind == .float(-0.035))
        #expect(doc["inf"]?.kind == .float(-.infinity))
        guard case let .dateTime(odt) = doc["odt"]?.kind else { Issue.record("odt"); return }
        #expect(odt.offsetMinutes == -420 && odt.time?.nanosecond == 999_999_000 && odt.kindName == "offset date-time")
        guard case let .dateTime(ldt) = doc["ldt"]?.kind, case let .dateTime(ld) = doc["ld"]?.kind, case let .dateTime(lt) = doc["lt"]?.kind else { Issue.record("dates"); return }
        #expect(ldt.kindName == "local date-time" && ld.kindName == "local date" && lt.kindName == "local time")
        #expect(lt.time?.nanosecond == 500_000_000)
        guard case let .array(arr) = doc["arr"]?.kind else { Issue.record("arr"); return }
        #expect(arr.count == 4)
        guard case let .array(points) = doc["points"]?.kind else { Issue.record("points"); return }
        #expect(points.count == 2)
        #expect(points.map(\.position.line) == [19, 21])
    }
}
