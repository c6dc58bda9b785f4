import Addresses
import Applying
import Descriptors
import Glibc
import DNS
import DomainNames
@testable import DNSProxies
import Monotonic
import Nftables
import Plan
import Policy
import ServiceSupport
import Testing
import TrustedFiles

/// A profile's resolver decided by a stepped clock, against the fake applier and a
/// recording edge: what is forwarded where and when, what is in the sets before a reply is
/// delivered, what a member gets when servers are silent or unreachable. No socket, no
/// wait: each test steps the clock through the schedule (2 s upstream timeouts, TTLs of
/// minutes) in well under a millisecond of its own.
@Suite struct ResolverCoreTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    static let first = DNSServer(address: IPAddress("10.0.0.1")!)
    static let second = DNSServer(address: IPAddress("10.0.0.2")!)
    static let routeSet = ProfileObjectNames("work").routeDomainSet(ipv4: true)

    struct Setup {
        var core: ResolverCore
        var edge: RecordingEdge
        var applier: FakeKernelApplier
        var settings: ResolverSettings
    }

    /// Profile work with two servers and a route.domains list, its table applied.
    static func setup(servers: String = #""10.0.0.1", "10.0.0.2""#) throws -> Setup {
        let policy = try Policy.parse([PolicySource(path: "/p/10.toml", text: """
            [profile.work]
            tunnel.interface = "wg0"
            dns = [\(servers)]
            route.domains = ["*.corp.example"]
            """)], resolver: SystemNameResolver())
        let applier = FakeKernelApplier()
        try applier.apply(Planner.plan(policy, facts: RuntimeFacts()))
        let settings = try #require(ResolverSettings.all(policy, resolvers: [:])["work"])
        let core = try ResolverCore(profile: "work", configuration: settings.configuration, random: KernelRandom(),
                                    filler: SetFiller(applier: applier, log: Log(minimum: .error)))
        return Setup(core: core, edge: RecordingEdge(applier: applier), applier: applier, settings: settings)
    }

    static func query(_ name: String, id: UInt16 = 7) -> [UInt8] {
        var query = DNSMessage(header: DNSHeader(id: id), questions: [DNSQuestion(name: DomainName(name)!, type: .a)])
        query.header.recursionDesired = true
        return query.encoded()
    }

    /// The server's answer to a forwarded query: `address` for its name, for `ttl` seconds.
    static func answer(_ forwarded: [UInt8], address: String, ttl: UInt32) throws -> [UInt8] {
        var message = try DNSMessage(parsing: forwarded)
        message.header.isResponse = true
        message.answers = [DNSRecord(name: message.questions[0].name, ttl: ttl, data: .address(IPAddress(address)!))]
        return message.encoded()
    }

    static func elements(_ applier: FakeKernelApplier) throws -> [IPPrefix: UInt32?] {
        var held: [IPPrefix: UInt32?] = [:]
        for element in try applier.elements(of: routeSet, ipv4: true) {
            if case let .prefix(prefix) = element.key { held[prefix] = element.timeout }
        }
        return held
    }

    @Test func aListedAnswersAddressIsInItsSetBeforeTheReplyIsDelivered() throws {
        let s = try Self.setup()
        s.core.query(Self.query("host.corp.example"), from: .local(1), over: .udp, now: Self.start)
        let deadline = s.core.perform(now: Self.start, edge: s.edge)
        #expect(s.edge.forwards.map(\.server) == [Self.first])
        #expect(deadline == Self.start + .seconds(2), "the upstream timeout is armed")
        let forwarded = try #require(s.edge.forwards.first?.query)
        let later = Self.start + .milliseconds(30)
        s.core.upstreamAnswer(try Self.answer(forwarded, address: "192.0.2.44", ttl: 300), from: Self.first, now: later)
        #expect(s.core.perform(now: later, edge: s.edge) == nil, "nothing left in flight")
        let reply = try DNSMessage(parsing: try #require(s.edge.replies.first?.response))
        #expect(reply.header.id == 7 && reply.answers.map(\.data) == [.address(IPAddress("192.0.2.44")!)])
        #expect(s.edge.batchesAtDelivery == [1], "the element was acknowledged before the reply was delivered")
        #expect(try Self.elements(s.applier) == [IPPrefix("192.0.2.44/32")!: 300])
    }

    @Test func anAnswerWhoseAddressesTheKernelRefusedIsServfailAndGivesNoAddress() throws {
        let s = try Self.setup()
        s.applier.failNextElements = SystemError("nft: adding elements", code: ENOSPC)
        s.core.query(Self.query("host.corp.example"), from: .local(1), over: .udp, now: Self.start)
        _ = s.core.perform(now: Self.start, edge: s.edge)
        let forwarded = try #require(s.edge.forwards.first?.query)
        s.core.upstreamAnswer(try Self.answer(forwarded, address: "192.0.2.44", ttl: 300), from: Self.first, now: Self.start)
        _ = s.core.perform(now: Self.start, edge: s.edge)
        let reply = try DNSMessage(parsing: try #require(s.edge.replies.first?.response))
        #expect(reply.header.responseCode == .serverFailure && reply.answers.isEmpty)
        #expect(try Self.elements(s.applier).isEmpty)
    }

    @Test func aSilentServerIsLeftAtItsDeadlineForTheNextThenServfail() throws {
        let s = try Self.setup()
        s.core.query(Self.query("www.example.org"), from: .local(1), over: .udp, now: Self.start)
        let deadline = try #require(s.core.perform(now: Self.start, edge: s.edge))
        let justBefore = Self.start + .milliseconds(1_999)
        s.core.tick(now: justBefore)
        #expect(s.core.perform(now: justBefore, edge: s.edge) == deadline, "not before its time")
        #expect(s.edge.forwards.map(\.server) == [Self.first])
        s.core.tick(now: deadline)
        let next = s.core.perform(now: deadline, edge: s.edge)
        #expect(s.edge.forwards.map(\.server) == [Self.first, Self.second], "the next server is asked at the deadline")
        #expect(next == deadline + .seconds(2) && s.edge.replies.isEmpty)
        s.core.tick(now: deadline + .seconds(2))
        #expect(s.core.perform(now: deadline + .seconds(2), edge: s.edge) == nil)
        let reply = try DNSMessage(parsing: try #require(s.edge.replies.first?.response))
        #expect(reply.header.responseCode == .serverFailure && s.edge.forwards.count == 2, "every try used: SERVFAIL")
        #expect(s.core.proxy.counters.retried == 1 && s.core.proxy.counters.failed == 1)
    }

    @Test func aForwardTheKernelRefusesMovesOnInTheSameRound() throws {
        let s = try Self.setup()
        s.edge.refusing = [Self.first]
        s.core.query(Self.query("www.example.org"), from: .local(1), over: .udp, now: Self.start)
        #expect(s.core.perform(now: Self.start, edge: s.edge) == Self.start + .seconds(2))
        #expect(s.edge.forwards.map(\.server) == [Self.first, Self.second], "no wait for the refused one's timeout")
        s.edge.refusing = [Self.first, Self.second]
        s.core.query(Self.query("www.example.net", id: 8), from: .local(2), over: .udp, now: Self.start)
        _ = s.core.perform(now: Self.start, edge: s.edge)
        let reply = try DNSMessage(parsing: try #require(s.edge.replies.first?.response))
        #expect(reply.header.id == 8 && reply.header.responseCode == .serverFailure, "both refused: SERVFAIL at once")
    }

    @Test func aTCPQueryWhoseConnectionsAreRefusedIsServfailAtOnce() throws {
        let s = try Self.setup()
        s.edge.refusingTCP = true
        s.core.query(Self.query("www.example.org"), from: .local(1), over: .tcp, now: Self.start)
        #expect(s.core.perform(now: Self.start, edge: s.edge) == nil)
        #expect(s.edge.tcpForwards.map(\.server) == [Self.first, Self.second] && s.edge.forwards.isEmpty)
        let reply = try DNSMessage(parsing: try #require(s.edge.replies.first?.response))
        #expect(reply.header.responseCode == .serverFailure)
    }

    /// The kernel gives an element that exists the new timeout, a shorter one too: an
    /// address answered again for a shorter TTL keeps what its element has left; once that
    /// has ended, the new answer's TTL is its life.
    @Test func anAddressAnsweredAgainKeepsItsLongerLifeUntilItEnds() throws {
        let s = try Self.setup(servers: #""10.0.0.1""#)
        func ask(_ name: String, id: UInt16, ttl: UInt32, at now: MonotonicInstant) throws {
            s.core.query(Self.query(name, id: id), from: .local(Int(id)), over: .udp, now: now)
            _ = s.core.perform(now: now, edge: s.edge)
            let forwarded = try #require(s.edge.forwards.last?.query)
            s.core.upstreamAnswer(try Self.answer(forwarded, address: "192.0.2.44", ttl: ttl), from: Self.first, now: now)
            _ = s.core.perform(now: now, edge: s.edge)
        }
        try ask("a.corp.example", id: 1, ttl: 300, at: Self.start)
        try ask("b.corp.example", id: 2, ttl: 60, at: Self.start + .seconds(100))
        try ask("c.corp.example", id: 3, ttl: 60, at: Self.start + .seconds(400))
        let timeouts = s.applier.elementBatches.map { $0[Self.routeSet]?.first?.timeout }
        #expect(timeouts == [300, 200, 60], "raised to the 200 s left, then its own 60 s after the element ended")
        #expect(s.edge.replies.count == 3)
    }

    /// Firefox's canary is answered by the proxy (NXDOMAIN: DNS over HTTPS stays off), for
    /// a profile with domain lists, without asking a server.
    @Test func theCanaryIsAnsweredHere() throws {
        let s = try Self.setup()
        s.core.query(Self.query("use-application-dns.net"), from: .local(1), over: .udp, now: Self.start)
        #expect(s.core.perform(now: Self.start, edge: s.edge) == nil)
        #expect(s.edge.forwards.isEmpty)
        let reply = try DNSMessage(parsing: try #require(s.edge.replies.first?.response))
        #expect(reply.header.responseCode == .nameError)
        #expect(s.core.proxy.counters.canaryAnswered == 1)
    }
}
