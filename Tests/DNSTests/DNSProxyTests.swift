import Addresses
import DomainNames
import Monotonic
import Testing
@testable import DNS

/// IDs from a script, so a test knows (and can force) the upstream IDs.
struct ScriptedRandom: RandomNumberGenerator {
    var values: [UInt64]
    var index = 0
    mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[min(index, values.count - 1)]
    }
}

/// A proxy, a fake clock and what came out of the last call.
struct ProxyHarness {
    static let servers = [DNSServer(address: IPAddress("10.64.0.1")!), DNSServer(address: IPAddress("fd00::1")!, port: 5353)]
    var proxy: DNSProxy<String>
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)

    /// `tunneled`: list 0 is a profile's bypass.domains, and the addresses of every other
    /// name go to the tunneled sets. `lists`: false for a proxy with no domain list.
    init(servers: [DNSServer] = servers, ids: [UInt64] = [0xa001, 0xa002, 0xa003, 0xa004, 0xa005], maxInFlight: Int = 16,
         tunneled: Bool = false, lists: Bool = true) throws {
        let sets = !lists ? [] : [
            DNSDomainSets(patterns: [try DomainPattern("bank.example"), try DomainPattern("*.cdn.example")], ipv4Set: "bypass_v4", ipv6Set: "bypass_v6"),
            DNSDomainSets(patterns: [try DomainPattern("*.corp.example")], ipv4Set: "route_v4", ipv6Set: "route_v6"),
        ]
        proxy = try DNSProxy(configuration: DNSProxyConfiguration(servers: servers, domainSets: sets,
                                                                  tunneledSets: tunneled ? DNSTunneledSets(bypassList: 0, ipv4Set: "tunneled_v4", ipv6Set: "tunneled_v6") : nil,
                                                                  elementTimeout: 60...3600, maxInFlight: maxInFlight),
                             random: ScriptedRandom(values: ids))
    }

    mutating func query(_ bytes: [UInt8], from client: String, over transport: DNSTransport = .udp) -> [DNSProxyAction<String>] {
        var actions: [DNSProxyAction<String>] = []
        proxy.query(bytes, from: client, over: transport, now: now, into: &actions)
        return actions
    }

    mutating func answer(_ bytes: [UInt8], from server: DNSServer = servers[0]) -> [DNSProxyAction<String>] {
        var actions: [DNSProxyAction<String>] = []
        proxy.upstreamAnswer(bytes, from: server, now: now, into: &actions)
        return actions
    }

    mutating func advance(_ seconds: Double) -> [DNSProxyAction<String>] {
        now = now + .milliseconds(Int64(seconds * 1000))
        var actions: [DNSProxyAction<String>] = []
        proxy.tick(now: now, into: &actions)
        return actions
    }
}

/// The forwarded query of a single forward action: its bytes and where it went.
func forwarded(_ actions: [DNSProxyAction<String>]) -> (bytes: [UInt8], server: DNSServer, transport: DNSTransport)? {
    guard actions.count == 1, case let .forward(bytes, server, transport) = actions[0] else { return nil }
    return (bytes, server, transport)
}

/// The response of a single plain reply action, parsed, and who it went to.
func replied(_ actions: [DNSProxyAction<String>]) -> (message: DNSMessage, bytes: [UInt8], client: String, transport: DNSTransport)? {
    guard actions.count == 1, case let .reply(bytes, client, transport) = actions[0], let message = try? DNSMessage(parsing: bytes) else { return nil }
    return (message, bytes, client, transport)
}

func upstreamID(_ bytes: [UInt8]) -> UInt16 { UInt16(bytes[0]) << 8 | UInt16(bytes[1]) }

@Suite struct DNSProxyTests {
    @Test func forwardsWithAFreshIDAndRelaysTheAnswerWithTheClientsID() throws {
        var harness = try ProxyHarness()
        let question = query("www.example", id: 0x1111, edns: true)
        let forward = try #require(forwarded(harness.query(question, from: "client")))
        #expect(upstreamID(forward.bytes) == 0xa001)
        #expect(Array(forward.bytes.dropFirst(2)) == Array(question.dropFirst(2)), "only the ID changes")
        #expect(forward.server == ProxyHarness.servers[0] && forward.transport == .udp)
        #expect(harness.proxy.inFlightCount == 1)
        #expect(harness.proxy.nextDeadline() == harness.now + .seconds(2))

        let upstream = answer("www.example", id: 0xa001, records: [a("www.example", "192.0.2.80")])
        let reply = try #require(replied(harness.answer(upstream)))
        #expect(reply.client == "client" && reply.transport == .udp)
        #expect(reply.message.header.id == 0x1111)
        #expect(Array(reply.bytes.dropFirst(2)) == Array(upstream.dropFirst(2)), "the upstream's bytes, only the ID restored")
        #expect(harness.proxy.inFlightCount == 0 && harness.proxy.nextDeadline() == nil)
        #expect(harness.proxy.counters.forwarded == 1 && harness.proxy.counters.answered == 1 && harness.proxy.counters.failed == 0)
    }

    @Test func listedAnswersComeOutAsFillThenReplyWithTimeoutsWithinBounds() throws {
        var harness = try ProxyHarness()
        let forward = try #require(forwarded(harness.query(query("bank.example", id: 7), from: "client")))
        let upstream = answer("bank.example", id: upstreamID(forward.bytes), records: [
            cname("bank.example", "bank.provider.example", ttl: 7200),
            a("bank.provider.example", "192.0.2.1", ttl: 300),
            a("bank.provider.example", "192.0.2.2", ttl: 5),
            DNSRecord(name: name("bank.provider.example"), ttl: 999_999, data: .address(IPAddress("2001:db8::1")!)),
        ])
        let actions = harness.answer(upstream)
        // One action: the reply travels with the elements, never ahead of them.
        #expect(actions.count == 1)
        guard case let .fillThenReply(elements, response, client, transport) = actions.first else {
            Issue.record("expected fill-then-reply, got \(actions)")
            return
        }
        #expect(client == "client" && transport == .udp)
        #expect(elements == [
            DNSSetElement(set: "bypass_v4", address: IPAddress("192.0.2.1")!, timeoutSeconds: 300),
            DNSSetElement(set: "bypass_v4", address: IPAddress("192.0.2.2")!, timeoutSeconds: 60),
            DNSSetElement(set: "bypass_v6", address: IPAddress("2001:db8::1")!, timeoutSeconds: 3600),
        ])
        // No record of the chain outlives its elements in the client's cache.
        let message = try DNSMessage(parsing: response)
        #expect(message.header.id == 7)
        #expect(message.answers.map(\.ttl) == [60, 300, 5, 3600])
        #expect(harness.proxy.counters.addressesAdded == ["bypass_v4": 2, "bypass_v6": 1])
        #expect(harness.proxy.counters.answered == 1)
    }

    @Test func aNameInTwoListsFillsBothAndUnlistedNamesFillNothing() throws {
        var harness = try ProxyHarness()
        let forward = try #require(forwarded(harness.query(query("app.corp.example", id: 1), from: "c")))
        let actions = harness.answer(answer("app.corp.example", id: upstreamID(forward.bytes), records: [
            cname("app.corp.example", "app.cdn.example"), a("app.cdn.example", "198.51.100.1"),
        ]))
        guard case let .fillThenReply(elements, _, _, _) = actions.first else { Issue.record("\(actions)"); return }
        #expect(Set(elements.map(\.set)) == ["bypass_v4", "route_v4"])
        // Listed, but no addresses (NODATA) or NXDOMAIN: a plain reply.
        let second = try #require(forwarded(harness.query(query("bank.example", .aaaa, id: 2), from: "c")))
        #expect(replied(harness.answer(answer("bank.example", .aaaa, id: upstreamID(second.bytes), records: []))) != nil)
        let third = try #require(forwarded(harness.query(query("x.cdn.example", id: 3), from: "c")))
        #expect(replied(harness.answer(answer("x.cdn.example", id: upstreamID(third.bytes), records: [], code: .nameError)))?.message.header.responseCode == .nameError)
        #expect(harness.proxy.counters.addressesAdded == ["bypass_v4": 1, "route_v4": 1])
    }

    @Test func aListedHTTPSAnswersHintsFillTheSets() throws {
        var harness = try ProxyHarness()
        let forward = try #require(forwarded(harness.query(query("bank.example", .https, id: 8), from: "c")))
        let hints = https("bank.example", params: [(4, [192, 0, 2, 9]), (6, IPAddress("2001:db8::9")!.bytes)], ttl: 999_999)
        let actions = harness.answer(answer("bank.example", .https, id: upstreamID(forward.bytes), records: [hints]))
        guard case let .fillThenReply(elements, response, client, _)? = actions.first else {
            Issue.record("no fill: \(actions)")
            return
        }
        #expect(client == "c")
        #expect(elements == [DNSSetElement(set: "bypass_v4", address: IPAddress("192.0.2.9")!, timeoutSeconds: 3600),
                             DNSSetElement(set: "bypass_v6", address: IPAddress("2001:db8::9")!, timeoutSeconds: 3600)])
        // The record promises the client no longer than its elements live.
        #expect(try DNSMessage(parsing: response).answers.map(\.ttl) == [3600])
    }

    /// The client asks for the HTTPS record of a listed name, then for the addresses of the
    /// record's TargetName, a name in no list: those fill the listed name's sets, in
    /// ServiceMode and AliasMode alike, until the HTTPS record's elements would expire. An
    /// unlisted name's target fills nothing.
    @Test func aListedHTTPSRecordsTargetNameFillsTheSetsWhenAskedLater() throws {
        var harness = try ProxyHarness(ids: Array(0xb001...0xb010))
        func wire(_ text: String) -> [UInt8] { name(text).wire }
        func ask(_ text: String, _ type: DNSRecordType, id: UInt16, records: (String) -> [DNSRecord]) throws -> [DNSProxyAction<String>] {
            let forward = try #require(forwarded(harness.query(query(text, type, id: id), from: "c")))
            return harness.answer(answer(text, type, id: upstreamID(forward.bytes), records: records(text)))
        }
        let alpn: (key: UInt16, value: [UInt8]) = (1, [2] + Array("h2".utf8))
        #expect(replied(try ask("bank.example", .https, id: 1) { [https($0, target: wire("edge.provider.example"), params: [alpn], ttl: 120)] }) != nil)
        #expect(replied(try ask("www.bank.example", .https, id: 2) { _ in [] }) != nil)
        #expect(replied(try ask("x.cdn.example", .https, id: 3) { [https($0, priority: 0, target: wire("pool.provider.example"), params: [])] }) != nil)
        #expect(replied(try ask("other.example", .https, id: 4) { [https($0, target: wire("elsewhere.provider.example"), params: [alpn])] }) != nil)

        for (target, address) in [("edge.provider.example", "192.0.2.10"), ("Pool.Provider.Example", "192.0.2.11")] {
            let actions = try ask(target, .a, id: 5) { [a($0, address)] }
            guard case let .fillThenReply(elements, _, _, _)? = actions.first else { Issue.record("\(target): \(actions)"); continue }
            #expect(elements == [DNSSetElement(set: "bypass_v4", address: IPAddress(address)!, timeoutSeconds: 300)])
        }
        #expect(replied(try ask("elsewhere.provider.example", .a, id: 6) { [a($0, "192.0.2.12")] }) != nil, "an unlisted name's target")
        _ = harness.advance(121)
        #expect(replied(try ask("edge.provider.example", .a, id: 7) { [a($0, "192.0.2.10")] }) != nil, "after the HTTPS record's time")
        #expect(try ask("pool.provider.example", .a, id: 8) { [a($0, "192.0.2.11")] }.first.map { if case .fillThenReply = $0 { true } else { false } } == true)
    }

    @Test func twoClientsWithTheSameIDGetTheirOwnAnswers() throws {
        var harness = try ProxyHarness()
        let first = try #require(forwarded(harness.query(query("one.example", id: 42), from: "alice")))
        let second = try #require(forwarded(harness.query(query("two.example", id: 42), from: "bob")))
        #expect(upstreamID(first.bytes) != upstreamID(second.bytes))
        // Answers in the other order.
        let toBob = try #require(replied(harness.answer(answer("two.example", id: upstreamID(second.bytes), records: [a("two.example", "192.0.2.2")]))))
        let toAlice = try #require(replied(harness.answer(answer("one.example", id: upstreamID(first.bytes), records: [a("one.example", "192.0.2.1")]))))
        #expect(toBob.client == "bob" && toBob.message.header.id == 42 && toBob.message.questions[0].name == name("two.example"))
        #expect(toAlice.client == "alice" && toAlice.message.header.id == 42 && toAlice.message.questions[0].name == name("one.example"))
    }

    @Test func anIDInFlightIsNeverDrawnAgain() throws {
        // The random source keeps saying 5.
        var harness = try ProxyHarness(ids: [5])
        let first = try #require(forwarded(harness.query(query("one.example", id: 1), from: "c")))
        let second = try #require(forwarded(harness.query(query("two.example", id: 1), from: "c")))
        let third = try #require(forwarded(harness.query(query("three.example", id: 1), from: "c")))
        #expect([upstreamID(first.bytes), upstreamID(second.bytes), upstreamID(third.bytes)] == [5, 6, 7])
        // Once answered, 5 is free again.
        #expect(replied(harness.answer(answer("one.example", id: 5, records: []))) != nil)
        let fourth = try #require(forwarded(harness.query(query("four.example", id: 1), from: "c")))
        #expect(upstreamID(fourth.bytes) == 5)
    }

    @Test func aSilentServerIsRetriedOnTheNextThenServfail() throws {
        var harness = try ProxyHarness()
        let first = try #require(forwarded(harness.query(query("www.example", .aaaa, id: 0x77, edns: true), from: "c", over: .tcp)))
        #expect(first.server == ProxyHarness.servers[0] && first.transport == .tcp)
        #expect(harness.advance(1.999).isEmpty)
        let retry = try #require(forwarded(harness.advance(0.001)))
        #expect(retry.server == ProxyHarness.servers[1] && retry.bytes == first.bytes && retry.transport == .tcp)
        #expect(harness.proxy.counters.retried == 1)
        #expect(harness.advance(1.9).isEmpty)
        let failure = try #require(replied(harness.advance(0.1)))
        #expect(failure.client == "c" && failure.transport == .tcp)
        #expect(failure.message.header.id == 0x77 && failure.message.header.responseCode == .serverFailure)
        #expect(failure.message.questions == [DNSQuestion(name: name("www.example"), type: .aaaa)])
        #expect(failure.message.edns != nil)
        #expect(harness.proxy.counters.failed == 1 && harness.proxy.inFlightCount == 0)
        // The answer that comes after the SERVFAIL is late: dropped.
        #expect(harness.answer(answer("www.example", .aaaa, id: upstreamID(first.bytes), records: [])).isEmpty)
        #expect(harness.proxy.counters.dropped[.unexpectedAnswer] == 1)
    }

    @Test func aLoneServerIsAskedTwiceBeforeServfail() throws {
        let lone = ProxyHarness.servers[0]
        var harness = try ProxyHarness(servers: [lone])
        let first = try #require(forwarded(harness.query(query("www.example", id: 3), from: "c")))
        #expect(harness.advance(1.999).isEmpty)
        // The first datagram was lost: the same query, same ID, to the same server again.
        let retry = try #require(forwarded(harness.advance(0.001)))
        #expect(retry.server == lone && retry.bytes == first.bytes && harness.proxy.counters.retried == 1)
        // An answer to either send is the answer.
        let reply = try #require(replied(harness.answer(answer("www.example", id: upstreamID(first.bytes), records: []), from: lone)))
        #expect(reply.client == "c" && reply.message.header.responseCode == .noError)
        // A second query that gets no answer at all: SERVFAIL after the second try.
        _ = try #require(forwarded(harness.query(query("gone.example", id: 4), from: "c")))
        _ = try #require(forwarded(harness.advance(2)))
        let failure = try #require(replied(harness.advance(2)))
        #expect(failure.message.header.responseCode == .serverFailure && harness.proxy.counters.failed == 1)
    }

    @Test func aForwardTheKernelRefusesMovesOnWithoutWaiting() throws {
        var harness = try ProxyHarness()
        let first = try #require(forwarded(harness.query(query("www.example", id: 5), from: "c")))
        var actions: [DNSProxyAction<String>] = []
        // No route to the first server: the second is asked at once.
        harness.proxy.forwardFailed(first.bytes, now: harness.now, into: &actions)
        let next = try #require(forwarded(actions))
        #expect(next.server == ProxyHarness.servers[1] && next.bytes == first.bytes)
        // Nor to the second: SERVFAIL now, not after two timeouts.
        actions = []
        harness.proxy.forwardFailed(next.bytes, now: harness.now, into: &actions)
        let failure = try #require(replied(actions))
        #expect(failure.client == "c" && failure.message.header.responseCode == .serverFailure && harness.proxy.inFlightCount == 0)
        // A refusal of something no longer in flight changes nothing.
        actions = []
        harness.proxy.forwardFailed(next.bytes, now: harness.now, into: &actions)
        #expect(actions.isEmpty && harness.proxy.counters.failed == 1)
        // A lone server is tried twice, then SERVFAIL, all at once.
        var lone = try ProxyHarness(servers: [ProxyHarness.servers[0]])
        let sent = try #require(forwarded(lone.query(query("www.example", id: 6), from: "c")))
        actions = []
        lone.proxy.forwardFailed(sent.bytes, now: lone.now, into: &actions)
        let again = try #require(forwarded(actions))
        actions = []
        lone.proxy.forwardFailed(again.bytes, now: lone.now, into: &actions)
        #expect(try #require(replied(actions)).message.header.responseCode == .serverFailure)
    }

    @Test func afterATimeoutTheNextServerIsTriedFirstAndTheFirstMayStillAnswer() throws {
        var harness = try ProxyHarness()
        let first = try #require(forwarded(harness.query(query("www.example", id: 1), from: "c")))
        _ = try #require(forwarded(harness.advance(2)))
        // The first server answers after all (it was asked): accepted.
        #expect(replied(harness.answer(answer("www.example", id: upstreamID(first.bytes), records: []), from: ProxyHarness.servers[0])) != nil)
        let next = try #require(forwarded(harness.query(query("www.example", id: 2), from: "c")))
        #expect(next.server == ProxyHarness.servers[1])
        // ...and the second server may answer it; the first, not asked this time, may not.
        #expect(harness.answer(answer("www.example", id: upstreamID(next.bytes), records: []), from: ProxyHarness.servers[0]).isEmpty)
        #expect(replied(harness.answer(answer("www.example", id: upstreamID(next.bytes), records: []), from: ProxyHarness.servers[1])) != nil)
    }

    @Test func spoofedAnswersAreDroppedAndCounted() throws {
        var harness = try ProxyHarness()
        let forward = try #require(forwarded(harness.query(query("bank.example", id: 9), from: "c")))
        let id = upstreamID(forward.bytes)
        let forged = [a("bank.example", "203.0.113.66")]
        // From a server not asked, from a stranger, with another ID, another name, another type.
        #expect(harness.answer(answer("bank.example", id: id, records: forged), from: ProxyHarness.servers[1]).isEmpty)
        #expect(harness.answer(answer("bank.example", id: id, records: forged), from: DNSServer(address: IPAddress("10.64.0.1")!, port: 5353)).isEmpty)
        #expect(harness.answer(answer("bank.example", id: id &+ 1, records: forged)).isEmpty)
        #expect(harness.answer(answer("evil.example", id: id, records: [a("evil.example", "203.0.113.66")])).isEmpty)
        #expect(harness.answer(answer("bank.example", .aaaa, id: id, records: forged)).isEmpty)
        // A query echoed back (QR clear), and a broken answer.
        #expect(harness.answer(forward.bytes).isEmpty)
        #expect(harness.answer(Array(answer("bank.example", id: id, records: forged).dropLast())).isEmpty)
        #expect(harness.proxy.counters.dropped == [.unexpectedAnswer: 4, .mismatchedAnswer: 2, .malformedAnswer: 1])
        #expect(harness.proxy.counters.addressesAdded.isEmpty)
        // The query is still waiting, and the genuine answer (names in another case) goes through.
        let actions = harness.answer(answer("BANK.example", id: id, records: [a("bank.example", "192.0.2.1")]))
        guard case let .fillThenReply(elements, _, "c", _) = actions.first else { Issue.record("\(actions)"); return }
        #expect(elements.map(\.address) == [IPAddress("192.0.2.1")!])
    }

    @Test func aFullTableAnswersItsOldestQueryServfail() throws {
        var harness = try ProxyHarness(maxInFlight: 2)
        let first = try #require(forwarded(harness.query(query("one.example", id: 1), from: "first")))
        _ = harness.advance(0.5)
        _ = try #require(forwarded(harness.query(query("two.example", id: 2), from: "second")))
        let actions = harness.query(query("three.example", id: 3), from: "third")
        #expect(actions.count == 2)
        let failure = try #require(replied(Array(actions.prefix(1))))
        #expect(failure.client == "first" && failure.message.header.id == 1 && failure.message.header.responseCode == .serverFailure)
        #expect(forwarded(Array(actions.suffix(1)))?.bytes.dropFirst(12).elementsEqual(query("three.example").dropFirst(12)) == true)
        #expect(harness.proxy.inFlightCount == 2 && harness.proxy.counters.evicted == 1)
        #expect(harness.answer(answer("one.example", id: upstreamID(first.bytes), records: [])).isEmpty)
    }

    @Test func whatClientsGetForQueriesThatCannotBeForwarded() throws {
        var harness = try ProxyHarness()
        // Shorter than a header: nothing to reply to.
        #expect(harness.query([1, 2, 3], from: "c").isEmpty)
        // A header and garbage: FORMERR with the client's ID.
        let formerr = try #require(replied(harness.query([0xab, 0xcd, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff], from: "c")))
        #expect(formerr.message.header.id == 0xabcd && formerr.message.header.responseCode == .formatError)
        // Two questions, and trailing bytes.
        var two = try DNSMessage(parsing: query("a.example"))
        two.questions.append(DNSQuestion(name: name("b.example"), type: .a))
        #expect(replied(harness.query(two.encoded(), from: "c"))?.message.header.responseCode == .formatError)
        #expect(replied(harness.query(query("a.example") + [0], from: "c"))?.message.header.responseCode == .formatError)
        // A response sent as a query, and another opcode.
        #expect(harness.query(answer("a.example", id: 1, records: []), from: "c").isEmpty)
        var notify = DNSHeader(id: 5)
        notify.opcode = .notify
        let notimp = try #require(replied(harness.query(DNSMessage(header: notify, questions: [DNSQuestion(name: name("a.example"), type: .soa)]).encoded(), from: "c")))
        #expect(notimp.message.header.responseCode == .notImplemented)
        #expect(harness.proxy.counters.dropped == [.unreadableQuery: 1, .responseFromClient: 1])
        #expect(harness.proxy.counters.failed == 4 && harness.proxy.counters.forwarded == 0)
        // No server at all.
        var serverless = try ProxyHarness(servers: [])
        #expect(replied(serverless.query(query("a.example", id: 3), from: "c"))?.message.header.responseCode == .refused)
    }

    @Test func aListedChainThatCannotBeFollowedIsNotRelayed() throws {
        var harness = try ProxyHarness()
        let loop = [cname("bank.example", "x.example"), cname("x.example", "bank.example"), a("x.example", "192.0.2.1")]
        let forward = try #require(forwarded(harness.query(query("bank.example", id: 4), from: "c")))
        let failure = try #require(replied(harness.answer(answer("bank.example", id: upstreamID(forward.bytes), records: loop))))
        #expect(failure.message.header.id == 4 && failure.message.header.responseCode == .serverFailure)
        #expect(failure.message.questions.map(\.name) == [name("bank.example")])
        // The same loop for a name in no list is the client's problem: relayed as it is.
        let other = try #require(forwarded(harness.query(query("x.example", id: 5), from: "c")))
        let relayed = try #require(replied(harness.answer(answer("x.example", id: upstreamID(other.bytes), records: [cname("x.example", "y.example"), cname("y.example", "x.example")]))))
        #expect(relayed.message.answers.count == 2)
    }

    @Test func configurationMistakesAreRefused() {
        func refused(_ configuration: DNSProxyConfiguration) -> Bool {
            (try? DNSProxy<String>(configuration: configuration, random: SystemRandomNumberGenerator())) == nil
        }
        let server = [DNSServer(address: IPAddress("10.64.0.1")!)]
        #expect(!refused(DNSProxyConfiguration(servers: server)))
        #expect(refused(DNSProxyConfiguration(servers: server, elementTimeout: 0...10)))
        #expect(refused(DNSProxyConfiguration(servers: server, upstreamTimeout: .zero)))
        #expect(refused(DNSProxyConfiguration(servers: server, maxInFlight: 0)))
        #expect(refused(DNSProxyConfiguration(servers: server, maxInFlight: 40_000)))
        #expect(refused(DNSProxyConfiguration(servers: server, domainSets: [DNSDomainSets(patterns: [], ipv4Set: "", ipv6Set: "v6")])))
    }
}

/// Random interleavings of queries, genuine and forged answers, retries and time: every query
/// gets exactly one reply, to its client, with its ID and question, however the answers
/// come (or do not); the in-flight table never passes its cap.
@Suite struct DNSProxyRandomTests {
    @Test func everyQueryIsRepliedToExactlyOnce() throws {
        var random = SeededRandom(seed: 1035)
        var harness = try ProxyHarness(ids: (0..<64).map { _ in UInt64.random(in: 0...3, using: &random) }, maxInFlight: 8)
        let names = ["bank.example", "www.example", "x.cdn.example", "app.corp.example"]
        var asked: [String: (id: UInt16, name: String)] = [:]
        var replies: [String: [DNSMessage]] = [:]
        var wire: [(query: [UInt8], server: DNSServer)] = []
        func take(_ actions: [DNSProxyAction<String>]) {
            for action in actions {
                switch action {
                case let .forward(query, server, _):
                    wire.append((query, server))
                case let .reply(response, client, _), let .fillThenReply(_, response, client, _):
                    replies[client, default: []].append(try! DNSMessage(parsing: response))
                }
            }
        }
        for step in 0..<3000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                let client = "q\(step)", id = UInt16.random(in: 0...3, using: &random)
                let name = names.randomElement(using: &random)!
                asked[client] = (id, name)
                take(harness.query(query(name, id: id), from: client))
            case 4..<8 where !wire.isEmpty:
                let (sent, server) = wire.remove(at: Int.random(in: 0..<wire.count, using: &random))
                let question = try DNSMessage(parsing: sent).questions[0].name.description
                let forged = Int.random(in: 0..<4, using: &random) == 0
                let owner = forged ? "evil.example" : question
                let from = forged && Bool.random(using: &random) ? ProxyHarness.servers[1 - ProxyHarness.servers.firstIndex(of: server)!] : server
                take(harness.answer(answer(owner, id: upstreamID(sent), records: [a(owner, "192.0.2.\(step % 200)")]), from: from))
            default:
                take(harness.advance(Double.random(in: 0...1.5, using: &random)))
            }
            #expect(harness.proxy.inFlightCount <= 8)
        }
        take(harness.advance(10))
        take(harness.advance(10))
        #expect(harness.proxy.inFlightCount == 0)
        #expect(Set(replies.keys) == Set(asked.keys))
        for (client, (id, name)) in asked {
            let got = replies[client] ?? []
            #expect(got.count == 1, "\(client) got \(got.count) replies")
            #expect(got.first?.header.id == id && got.first?.questions.first?.name == DomainName(name))
        }
        // The draw must exercise every path.
        let counters = harness.proxy.counters
        #expect(counters.answered > 100 && counters.failed > 50 && counters.evicted > 0 && counters.retried > 50)
        #expect(counters.dropped[.mismatchedAnswer, default: 0] > 10 && counters.dropped[.unexpectedAnswer, default: 0] > 10)
    }
}

/// The table of remembered service targets: bounded, and what expired makes room.
@Suite struct ServiceTargetsTests {
    @Test func boundedAndExpiredEntriesMakeRoom() {
        var targets = ServiceTargets()
        let start = MonotonicInstant(nanoseconds: 1_000_000_000)
        for i in 0..<ServiceTargets.capacity {
            targets.remember(name("t\(i).example"), lists: .list(0), until: start + .seconds(i < 10 ? 5 : 500), now: start)
        }
        targets.remember(name("late.example"), lists: .list(0), until: start + .seconds(500), now: start)
        #expect(targets.lists(of: name("late.example"), now: start) == [], "full: not remembered")
        #expect(targets.lists(of: name("T1.Example"), now: start) == .list(0), "names compare without case")
        let later = start + .seconds(10)
        #expect(targets.lists(of: name("t1.example"), now: later) == [], "expired")
        targets.remember(name("late.example"), lists: .list(1), until: later + .seconds(60), now: later)
        #expect(targets.lists(of: name("late.example"), now: later) == .list(1), "the expired entries made room")
        targets.remember(name("late.example"), lists: .list(0), until: later + .seconds(1), now: later)
        #expect(targets.lists(of: name("late.example"), now: later + .seconds(30)) == [.list(0), .list(1)], "joined, for the later expiry")
    }
}
