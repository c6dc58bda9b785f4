import Testing
import TOML

/// Tables, arrays of tables, dotted keys and inline tables: what they build
/// and which redefinitions are refused.
@Suite struct TableTests {
    @Test func keysKeepDocumentOrder() throws {
        let table = try parseValid("""
        z = 1
        a = 2
        [m]
        [b.c]
        [b]
        y = 1
        x = 2
        """)
        #expect(table.keys == ["z", "a", "m", "b"])
        #expect(table["b"]?.table?.keys == ["c", "y", "x"])
    }

    @Test func dottedKeysBuildNestedTables() throws {
        let table = try parseValid("""
        fruit.apple.color = "red"
        fruit.apple.taste.sweet = true
        fruit.orange = 2
        "a.b".c = 1
        """)
        #expect(table.value(atPath: ["fruit", "apple", "color"])?.string == "red")
        #expect(table.value(atPath: ["fruit", "apple", "taste", "sweet"])?.boolean == true)
        #expect(table.value(atPath: ["fruit", "orange"])?.integer == 2)
        #expect(table.value(atPath: ["a.b", "c"])?.integer == 1)
        #expect(table.value(atPath: ["a", "b"]) == nil)
    }

    @Test func subTablesOfDottedTablesAndImplicitSuperTables() throws {
        let table = try parseValid("""
        [fruit]
        apple.color = "red"
        [fruit.apple.texture]
        smooth = true
        [x.y.z]
        [x]
        w = 1
        """)
        #expect(table.value(atPath: ["fruit", "apple", "texture", "smooth"])?.boolean == true)
        #expect(table.value(atPath: ["x", "w"])?.integer == 1)
        #expect(table.value(atPath: ["x", "y", "z"])?.table?.isEmpty == true)
    }

    @Test func arraysOfTablesAndTheirSubTables() throws {
        let table = try parseValid("""
        [[fruits]]
        name = "apple"
        [fruits.physical]
        color = "red"
        [[fruits.varieties]]
        name = "red delicious"
        [[fruits.varieties]]
        name = "granny smith"
        [[fruits]]
        name = "banana"
        [[fruits.varieties]]
        name = "plantain"
        """)
        let fruits = try #require(table["fruits"]?.array)
        #expect(fruits.count == 2)
        #expect(fruits[0].table?["physical"]?.table?["color"]?.string == "red")
        #expect(fruits[0].table?["varieties"]?.array?.compactMap { $0.table?["name"]?.string } == ["red delicious", "granny smith"])
        #expect(fruits[1].table?["varieties"]?.array?.count == 1)
        #expect(fruits[1].table?["physical"] == nil)
    }

    @Test func inlineTables() throws {
        let table = try parseValid(#"point = { x = 1, y.z = 2, "q r" = { } }"#)
        let point = try #require(table["point"]?.table)
        #expect(point.keys == ["x", "y", "q r"])
        #expect(point["y"]?.table?["z"]?.integer == 2)
        #expect(point["q r"]?.table?.isEmpty == true)
    }

    @Test func redefinitionsAreRefused() {
        expectError("a = 1\na = 2", at: 2, 1, #"duplicate key "a" (first defined at line 1)"#)
        expectError("[a]\n[a]", at: 2, 2, "table [a] defined twice (first at line 1)")
        expectError("[profile.work]\nx = 1\n[profile.work]", at: 3, 10, "table [profile.work] defined twice (first at line 1)")
        expectError("[a.b]\n[a]\n[a]", at: 3, 2, "table [a] defined twice (first at line 2)")
        expectError("[fruit]\napple.color = 1\n[fruit.apple]", at: 3, 8, "dotted keys already defined it at line 2")
        expectError("[a.b]\n[a]\nb.c = 1", at: 3, 1, "the table was defined by a header at line 1")
        expectError("a = {b = 1}\na.c = 2", at: 2, 1, "inline tables cannot be extended")
        expectError("a = {b = 1}\n[a.c]", at: 2, 2, "inline tables cannot be extended")
        expectError("a = [1]\n[[a]]", at: 2, 3, "already an array written with [ ]")
        expectError("[a]\n[[a]]", at: 2, 3, "[a] is already a table")
        expectError("[[a]]\n[a]", at: 2, 2, "conflicts with the array of tables [[a]]")
        expectError("a = 1\na.b = 2", at: 2, 1, #""a" is already defined as an integer at line 1"#)
        expectError("a.b = 1\na = 2", at: 2, 1, #"duplicate key "a": it is already a table"#)
        expectError("a = {b = 1, b = 2}", at: 1, 13, "in inline table")
        expectError("[\"a b\".c]\n['a b'.c]", at: 2, 8, "table ['a b'.c] defined twice")
    }

    @Test func keysDifferingOnlyInNormalizationAreDistinct() throws {
        let table = try parseValid("\"\\u00e9\" = 1\n\"e\\u0301\" = 2")
        #expect(table.count == 2)
        #expect(table["\u{E9}"]?.integer == 1)
        #expect(table["e\u{301}"]?.integer == 2)
    }

    @Test func tableAPI() throws {
        var table = try parseValid("a = 1\nb = 'x'")
        #expect(table.count == 2)
        #expect(table.contains(key: "a"))
        #expect(!table.contains(key: "c"))
        #expect(table.map(\.key) == ["a", "b"])
        #expect(table[1].value.string == "x")
        let replaced = table.updateValue(TOMLValue(.boolean(true), at: pos(9, 9)), forKey: "a", keyPosition: pos(9, 1))
        #expect(replaced?.integer == 1)
        table.updateValue(TOMLValue(.integer(3), at: pos(10, 5)), forKey: "c", keyPosition: pos(10, 1))
        #expect(table.keys == ["a", "b", "c"])
        #expect(table["a"]?.boolean == true)
        #expect(table.entry(forKey: "c")?.keyPosition == pos(10, 1))
    }

    @Test func typeNames() throws {
        let table = try parseValid("""
        s = ""
        i = 1
        f = 1.0
        b = true
        odt = 1979-05-27T07:32:00Z
        ldt = 1979-05-27T07:32:00
        ld = 1979-05-27
        lt = 07:32:00
        a = []
        t = {}
        """)
        #expect(table.map(\.value.typeName) == [
            "string", "integer", "float", "boolean", "offset date-time", "local date-time",
            "local date", "local time", "array", "table",
        ])
        #expect(table["i"]?.typeNameWithArticle == "an integer")
        #expect(table["s"]?.typeNameWithArticle == "a string")
        #expect(table["odt"]?.typeNameWithArticle == "an offset date-time")
    }
}
