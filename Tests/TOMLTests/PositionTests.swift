import Testing
import TOML

/// Where keys, values and tables are said to be.
@Suite struct PositionTests {
    @Test func keysAndValuesOfSimplePairs() throws {
        let table = try parseValid("""
        # comment
        name = "vpn"
          mtu   =   1420
        \tflag = true
        """)
        #expect(table.entry(forKey: "name")?.keyPosition == pos(2, 1))
        #expect(table["name"]?.position == pos(2, 8))
        #expect(table.entry(forKey: "mtu")?.keyPosition == pos(3, 3))
        #expect(table["mtu"]?.position == pos(3, 13))
        // A tab is one column.
        #expect(table.entry(forKey: "flag")?.keyPosition == pos(4, 2))
        #expect(table["flag"]?.position == pos(4, 9))
    }

    @Test func columnsCountUnicodeScalarsNotBytes() throws {
        let table = try parseValid("\"é日🙂\" = \"x\" # é\nb = 'ü'\n")
        // "é日🙂" is 3 scalars inside quotes (1+3+1 = 5 columns), then " = ".
        #expect(table["é日🙂"]?.position == pos(1, 9))
        #expect(table.entry(forKey: "b")?.keyPosition == pos(2, 1))
    }

    @Test func byteOrderMarkIsNotAColumn() throws {
        let table = try TOML.parse([0xEF, 0xBB, 0xBF] + Array("a = 1\nb = 2".utf8))
        #expect(table.entry(forKey: "a")?.keyPosition == pos(1, 1))
        #expect(table["a"]?.position == pos(1, 5))
        #expect(table.entry(forKey: "b")?.keyPosition == pos(2, 1))
    }

    @Test func crlfCountsAsOneLineEnding() throws {
        let table = try parseValid("a = 1\r\n\r\nb = [\r\n  2,\r\n  3]\r\nc = 4")
        #expect(table.entry(forKey: "b")?.keyPosition == pos(3, 1))
        #expect(table["b"]?.array?.map(\.position) == [pos(4, 3), pos(5, 3)])
        #expect(table.entry(forKey: "c")?.keyPosition == pos(6, 1))
    }

    @Test func positionsAfterMultilineStrings() throws {
        let table = try parseValid("""
        a = \"\"\"
        one
        two \\
            three\"\"\"
        b = '''
        x'''
        c = 1
        """)
        #expect(table["a"]?.position == pos(1, 5))
        #expect(table["a"]?.string == "one\ntwo three")
        #expect(table.entry(forKey: "b")?.keyPosition == pos(5, 1))
        #expect(table.entry(forKey: "c")?.keyPosition == pos(7, 1))
    }

    @Test func dottedKeysGiveEachTableThePositionOfItsKey() throws {
        let table = try parseValid("""
        x = 0
        tunnel.interface = "wg0"
        tunnel . mtu = 1420
        """)
        let tunnel = try #require(table.entry(forKey: "tunnel"))
        #expect(tunnel.keyPosition == pos(2, 1))
        #expect(tunnel.value.position == pos(2, 1))
        #expect(tunnel.value.table?.position == pos(2, 1))
        #expect(tunnel.value.table?.entry(forKey: "interface")?.keyPosition == pos(2, 8))
        #expect(tunnel.value.table?["interface"]?.position == pos(2, 20))
        #expect(tunnel.value.table?.entry(forKey: "mtu")?.keyPosition == pos(3, 10))
    }

    @Test func headerTablesAreAtTheirHeaderAndImplicitOnesAtTheirKey() throws {
        let table = try parseValid("""
        top = 1

          [profile.work]
        a = 1
        [profile.home]
        """)
        let profile = try #require(table.entry(forKey: "profile"))
        // Created implicitly by [profile.work]: the key in that header.
        #expect(profile.keyPosition == pos(3, 4))
        #expect(profile.value.position == pos(3, 4))
        let work = try #require(profile.value.table?.entry(forKey: "work"))
        #expect(work.keyPosition == pos(3, 12))
        #expect(work.value.position == pos(3, 3))
        #expect(work.value.table?.position == pos(3, 3))
        #expect(profile.value.table?["home"]?.position == pos(5, 1))
    }

    @Test func anImplicitTableDefinedLaterMovesToItsHeader() throws {
        let table = try parseValid("[a.b]\n[a]\nx = 1")
        let a = try #require(table.entry(forKey: "a"))
        #expect(a.keyPosition == pos(1, 2))
        #expect(a.value.position == pos(2, 1))
    }

    @Test func arraysOfTables() throws {
        let table = try parseValid("""
        [[rule]]
        a = 1

        [[rule]]
        [rule.match]
        b = 2
        """)
        let rule = try #require(table.entry(forKey: "rule"))
        #expect(rule.keyPosition == pos(1, 3))
        #expect(rule.value.position == pos(1, 1))
        let elements = try #require(rule.value.array)
        #expect(elements.map(\.position) == [pos(1, 1), pos(4, 1)])
        #expect(elements[1].table?["match"]?.position == pos(5, 1))
        #expect(elements[1].table?["match"]?.table?.entry(forKey: "b")?.keyPosition == pos(6, 1))
    }

    @Test func arraysAndInlineTables() throws {
        let table = try parseValid("""
        a = [1, [2, 3], { k = "v", n.m = 4 }]
        """)
        let a = try #require(table["a"]?.array)
        #expect(table["a"]?.position == pos(1, 5))
        #expect(a.map(\.position) == [pos(1, 6), pos(1, 9), pos(1, 17)])
        #expect(a[1].array?.map(\.position) == [pos(1, 10), pos(1, 13)])
        let inline = try #require(a[2].table)
        #expect(inline.position == pos(1, 17))
        #expect(inline.entry(forKey: "k")?.keyPosition == pos(1, 19))
        #expect(inline["k"]?.position == pos(1, 23))
        #expect(inline.entry(forKey: "n")?.keyPosition == pos(1, 28))
        #expect(inline["n"]?.table?.entry(forKey: "m")?.keyPosition == pos(1, 30))
        #expect(inline["n"]?.table?["m"]?.position == pos(1, 34))
    }

    @Test func rootTableIsAtTheStart() throws {
        #expect(try parseValid("").position == pos(1, 1))
        #expect(try parseValid("\n\n[a]").position == pos(1, 1))
    }

    @Test func longLinesKeepExactColumns() throws {
        let count = 5000
        let text = "a = [" + (0..<count).map(String.init).joined(separator: ", ") + "]"
        let elements = try #require(try parseValid(text)["a"]?.array)
        var column = 6
        for (index, element) in elements.enumerated() {
            #expect(element.position.column == column)
            column += String(index).count + 2
        }
    }
}
