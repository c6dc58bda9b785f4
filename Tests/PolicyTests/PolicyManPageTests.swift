import Foundation
import Policy
import Testing

/// vpnexec-policy(5) documents exactly the keys the parser accepts: each table's keys are
/// learned from the parser itself (its "known keys" answer to an unknown key), so a key
/// added to the parser and not to the page, or left in the page after the parser dropped
/// it, fails here.
@Suite struct PolicyManPageTests {
    struct AnyName: NameResolver {
        func uid(ofUser name: String) -> UInt32? { 5000 }
        func gid(ofGroup name: String) -> UInt32? { 6000 }
    }

    static let probe = "zqxjkvw"

    /// Context ("[profile.p] route") → the keys the parser knows there.
    static func knownKeys() throws -> [String: Set<String>] {
        let text = """
            \(probe) = 1
            [profile.p]
            \(probe) = 1
            tunnel.interface = "wg0"
            tunnel.\(probe) = 1
            route.\(probe) = 1
            forward.\(probe) = 1
            bypass.\(probe) = 1
            [system]
            \(probe) = 1
            bypass.\(probe) = 1
            [dns]
            \(probe) = 1
            [routing]
            \(probe) = 1
            """
        var known: [String: Set<String>] = [:]
        do {
            _ = try Policy.parse([PolicySource(path: "/probe.toml", text: text)], resolver: AnyName())
        } catch {
            for diagnostic in error.diagnostics {
                let message = diagnostic.message
                guard let context = message.range(of: "unknown key \"\(probe)\" "), let list = message.range(of: " (known keys: ") else { continue }
                var place = String(message[context.upperBound..<list.lowerBound])
                place = place.hasPrefix("in ") ? String(place.dropFirst(3)) : ""
                known[place] = Set(message[list.upperBound...].dropLast().components(separatedBy: ", "))
            }
        }
        return known
    }

    /// Subsection title → the keys its `.It Cm KEY` items define.
    static func documentedKeys() throws -> [String: Set<String>] {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/man/vpnexec-policy.5").standardized.path
        var documented: [String: Set<String>] = [:]
        var section: String?
        for line in try String(contentsOfFile: page, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix(".Sh ") { section = nil }
            if line.hasPrefix(".Ss ") { section = line.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            if let section, line.hasPrefix(".It Cm "), let key = line.dropFirst(7).split(separator: " ").first {
                documented[section, default: []].insert(String(key))
            }
        }
        return documented
    }

    @Test func everyKeyTheParserAcceptsIsDocumentedAndNoOther() throws {
        let known = try Self.knownKeys()
        #expect(known[""] == ["profile", "system", "dns", "routing"], "the top level: \(known)")
        var expected: [String: Set<String>] = [:]
        for (table, context, section) in [("profile", "[profile.p]", "[profile.NAME]"), ("system", "[system]", "[system]"),
                                          ("dns", "[dns]", "[dns]"), ("routing", "[routing]", "[routing]")] {
            let keys = try #require(known[context], "no known keys reported for \(table): \(known)")
            expected[section] = Set(keys.flatMap { key -> [String] in
                // A key that is itself a table (tunnel, route, bypass) is written dotted.
                guard let inner = known["\(context) \(key)"] else { return [key] }
                return inner.map { "\(key).\($0)" }
            })
        }
        #expect(expected["[profile.NAME]"]?.contains("tunnel.wireguard") == true && expected["[system]"]?.contains("bypass.users") == true,
                "the parser's nested tables were found: \(expected)")
        let documented = try Self.documentedKeys()
        for section in expected.keys.sorted() {
            let missing = expected[section, default: []].subtracting(documented[section, default: []])
            let extra = documented[section, default: []].subtracting(expected[section, default: []])
            #expect(missing.isEmpty, "vpnexec-policy(5) \(section) does not document \(missing.sorted())")
            #expect(extra.isEmpty, "vpnexec-policy(5) \(section) documents keys the parser does not accept: \(extra.sorted())")
        }
        #expect(Set(documented.keys) == Set(expected.keys), "subsections: \(documented.keys.sorted())")
    }

    /// The ranges the page gives for `[routing]`'s integers ("256 to 4294963198.") are the
    /// parser's: both ends accepted, one past either end refused.
    @Test func routingRangesAreTheParsersBounds() throws {
        let page = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/man/vpnexec-policy.5").standardized.path, encoding: .utf8)
        for key in ["table_base", "rule_priority"] {
            // The item's text up to the next item: the first "N to M" in it.
            let item = try #require(page.range(of: ".It Cm \(key) "), "no item for \(key)")
            let text = page[item.upperBound...].split(separator: ".It ", maxSplits: 1).first ?? ""
            let range = try #require(text.firstMatch(of: /(\d+) to (\d+)/), "no range in the item of \(key): \(text)")
            let (low, high) = (try #require(Int64(range.1)), try #require(Int64(range.2)))
            func accepts(_ value: Int64) -> Bool {
                (try? Policy.parse([PolicySource(path: "/p.toml", text: "[routing]\n\(key) = \(value)\n")], resolver: AnyName())) != nil
            }
            #expect(accepts(low) && accepts(high), "\(key): the page says \(low) to \(high)")
            #expect(!accepts(low - 1) && !accepts(high + 1), "\(key): the page says \(low) to \(high), the parser accepts more")
        }
    }
}
