import DomainNames
import Testing
@testable import DNS

@Suite struct DomainPatternTests {
    @Test func patternsAsPoliciesWriteThem() throws {
        let exact = try DomainPattern("Bank.Example.")
        #expect(exact.scope == .exactly && exact.domain == name("bank.example") && exact.description == "bank.example")
        #expect(exact.domain.description == "bank.example.", "stored in lower case")
        let below = try DomainPattern("*.corp.example")
        #expect(below.scope == .below && below.domain == name("corp.example") && below.description == "*.corp.example")
        #expect(try DomainPattern("_sip._tcp.xn--bcher-kva.example").domain.labels.count == 4)
        #expect(try DomainPattern("localhost").domain == name("localhost"))
        let longest = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + "." + String(repeating: "c", count: 63) + "." + String(repeating: "d", count: 61)
        #expect(try DomainPattern(longest).domain.wire.count == 255)
    }

    @Test func mistakesAreRefusedWithTheirReason() {
        func reason(_ text: String) -> DomainPatternError.Reason? {
            do {
                _ = try DomainPattern(text)
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason("") == .empty)
        #expect(reason(".") == .empty)
        #expect(reason("bank..example") == .emptyLabel)
        #expect(reason(".bank.example") == .emptyLabel)
        #expect(reason(String(repeating: "a", count: 64) + ".example") == .labelTooLong(String(repeating: "a", count: 64)))
        #expect(reason(Array(repeating: "abcdefghi", count: 26).joined(separator: ".")) == .tooLong(259))
        #expect(reason("bücher.example") == .notASCII)
        #expect(reason("bank example") == .invalidCharacter(" "))
        #expect(reason("bank.example/") == .invalidCharacter("/"))
        #expect(reason("a.*.example") == .misplacedWildcard)
        #expect(reason("*corp.example") == .misplacedWildcard)
        #expect(reason("*.*.example") == .misplacedWildcard)
        #expect(reason("*") == .wildcardAlone)
        #expect(reason("*.") == .wildcardAlone)
        #expect(reason("-bad.example") == .hyphenAtLabelEdge("-bad"))
        #expect(reason("bad-.example") == .hyphenAtLabelEdge("bad-"))
        #expect(reason("www.-.example") == .hyphenAtLabelEdge("-"))
        #expect(reason("*.-bad.example") == .hyphenAtLabelEdge("-bad"))
        #expect(reason("bank.example-") == .hyphenAtLabelEdge("example-"))
        #expect(reason("192.0.2.1") == .numericTopLabel)
        #expect(reason("*.0.2.1.") == .numericTopLabel)
        #expect(reason("host.123") == .numericTopLabel)
    }

    /// What a hyphen or digit rule must not refuse: names that exist.
    @Test func hyphensAndDigitsWhereNamesHaveThem() throws {
        for text in ["a-b.example", "r3---sn-4g5e6nze.googlevideo.com", "xn--bcher-kva.example", "1.2.3.example", "123.example",
                     "*.0-9.example", "_dmarc.bank.example", "b.xn--p1ai", "example.a1"] {
            #expect((try? DomainPattern(text)) != nil, "\(text)")
        }
    }

    @Test func errorsTellThePolicyAuthorWhatToWrite() {
        #expect(throws: DomainPatternError.self) { try DomainPattern("bücher.example") }
        do {
            _ = try DomainPattern("bücher.example")
        } catch {
            #expect(error.description.contains("xn--") && error.description.contains("\"bücher.example\""))
        }
        do {
            _ = try DomainPattern("a.*.example")
        } catch {
            #expect(error.description == "domain \"a.*.example\" has \"*\" where it cannot be; \"*\" is only allowed as the whole first label, as in \"*.corp.example\"")
        }
        do {
            _ = try DomainPattern("-bad.example")
        } catch {
            #expect(error.description == "domain \"-bad.example\" has the label \"-bad\", which starts or ends with \"-\"; a label starts and ends with a letter or digit")
        }
    }
}

/// The list index against a naive model (every pattern tried on every name, labels compared
/// one by one) on random names and patterns drawn from a small alphabet, so that names often
/// fall on, below and beside the patterns.
@Suite struct DomainListTests {
    static let alphabet: [[UInt8]] = ["a", "B", "c", "corp", "Example", "xn--d", "_e", "a.b", "\u{00}", "\u{7f}"].map { Array($0.utf8) }

    static func randomLabels(_ random: inout SeededRandom, maxCount: Int) -> [[UInt8]] {
        (0..<Int.random(in: 1...maxCount, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
    }

    /// The model: lower-cased labels compared from the right.
    static func naive(_ lists: [[DomainPattern]], _ name: DomainName) -> DomainList.Membership {
        let labels = name.labels.map { $0.map(Wire.lower) }
        var result: DomainList.Membership = []
        for (index, list) in lists.enumerated() {
            for pattern in list {
                let domain = pattern.domain.labels.map(Array.init)
                let matches = switch pattern.scope {
                case .exactly: labels == domain
                case .below: labels.count > domain.count && Array(labels.suffix(domain.count)) == domain
                }
                if matches { result.insert(.list(index)) }
            }
        }
        return result
    }

    @Test func matchesAsTheNaiveModelOnRandomNames() throws {
        var random = SeededRandom(seed: 53)
        var hits = 0
        for _ in 0..<40 {
            var lists: [[DomainPattern]] = [[], [], []]
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                // Patterns only use characters a policy may write.
                let labels = Self.randomLabels(&random, maxCount: 3).filter { $0.allSatisfy { $0 > 0x2f && $0 < 0x7f && $0 != 0x2e } }
                guard !labels.isEmpty else { continue }
                let text = (Bool.random(using: &random) ? "*." : "") + labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
                lists[Int.random(in: 0..<3, using: &random)].append(try DomainPattern(text))
            }
            let index = DomainList(lists)
            for _ in 0..<200 {
                let name = try #require(DomainName(labels: Self.randomLabels(&random, maxCount: 5)))
                let expected = Self.naive(lists, name)
                #expect(index.lists(matching: name) == expected, "\(name) in \(lists)")
                if !expected.isEmpty { hits += 1 }
            }
        }
        // The draw must land on patterns often enough to mean something.
        #expect(hits > 500)
    }

    @Test func semantics() throws {
        let index = DomainList([[try DomainPattern("bank.example")], [try DomainPattern("*.corp.example"), try DomainPattern("*.example")]])
        #expect(index.lists(matching: name("BANK.example.")) == [.list(0), .list(1)])
        #expect(index.lists(matching: name("www.bank.example")) == .list(1))
        #expect(index.lists(matching: name("corp.example")) == .list(1), "below example, not below corp.example")
        #expect(index.lists(matching: name("a.b.corp.example")) == .list(1))
        #expect(index.lists(matching: name("example")) == [])
        #expect(index.lists(matching: name("bank.example.net")) == [])
        #expect(index.lists(matching: .root) == [])
        #expect(DomainList([]).lists(matching: name("bank.example")) == [])
    }

    @Test func namesInsideMessagesMatchThroughCompression() throws {
        let index = DomainList([[try DomainPattern("*.cdn.example")]])
        let message = answer("bank.example", id: 1, records: [cname("bank.example", "Bank.CDN.example"), a("bank.cdn.example", "192.0.2.1")])
        // The answer's records: the CNAME's target and the address's owner are compressed.
        var owners: [Int] = []
        try MessageWalker(message).walk(message, question: { _ in }, record: { owners.append($1.name) })
        #expect(try index.lists(matchingNameAt: owners[1], in: message) == .list(0))
        #expect(try index.lists(matchingNameAt: 12, in: message) == [])
        #expect(throws: DNSWireError.pointerOutOfRange) { try index.lists(matchingNameAt: 0, in: [0xc0, 0xff]) }
    }

    /// Ten thousand patterns (a large block list's size) load and answer a hundred thousand
    /// lookups, checked against the model on a sample. No timing is asserted: the point is
    /// that this stays a test that finishes in a blink, which a linear scan would not.
    @Test func tenThousandPatterns() throws {
        var random = SeededRandom(seed: 7)
        var bypass: [DomainPattern] = [], route: [DomainPattern] = []
        for i in 0..<10_000 {
            let zone = "zone\(i % 500).example"
            if i % 3 == 0 {
                route.append(try DomainPattern("*.\(i).\(zone)"))
            } else {
                bypass.append(try DomainPattern("host\(i).\(zone)"))
            }
        }
        let lists = [bypass, route]
        let index = DomainList(lists)
        #expect(index.count == 10_000)
        // What each lookup must give, by construction: host<i> is in bypass when it was made
        // (i < 10,000, not a multiple of 3), www.<i> is below route's *.<i> when that was made,
        // and <i>.zone itself is in no list (a wildcard is strictly below its domain).
        var wrong = 0, matched = 0
        for n in 0..<100_000 {
            let i = Int.random(in: 0..<12_000, using: &random)
            let zone = "zone\(i % 500).example"
            let (text, expected): (String, DomainList.Membership) = switch n % 3 {
            case 0: ("host\(i).\(zone)", i < 10_000 && i % 3 != 0 ? .list(0) : [])
            case 1: ("www.\(i).\(zone)", i < 10_000 && i % 3 == 0 ? .list(1) : [])
            default: ("\(i).\(zone)", [])
            }
            let name = DomainName(text)!
            let membership = index.lists(matching: name)
            if membership != expected { wrong += 1 }
            if !membership.isEmpty { matched += 1 }
            if n % 5000 == 0 { #expect(membership == Self.naive(lists, name)) }
        }
        #expect(wrong == 0)
        #expect(matched > 20_000)
    }
}
