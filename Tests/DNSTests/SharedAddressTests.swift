import Addresses
import Monotonic
import Testing
@testable import DNS

/// A query for `text` through the proxy and the upstream's answer with `records`: what the
/// proxy then asks of its caller.
func resolve(_ harness: inout ProxyHarness, _ text: String, _ type: DNSRecordType = .a, records: [DNSRecord],
             code: DNSResponseCode = .noError) throws -> [DNSProxyAction<String>] {
    let forward = try #require(forwarded(harness.query(query(text, type, id: 9), from: "member")), "\(text) was not forwarded")
    return harness.answer(answer(text, type, id: upstreamID(forward.bytes), records: records, code: code))
}

/// The elements of a single fill-then-reply action ([] for a plain reply).
func filled(_ actions: [DNSProxyAction<String>]) -> [DNSSetElement]? {
    guard actions.count == 1 else { return nil }
    switch actions[0] {
    case let .fillThenReply(elements, _, _, _): return elements
    case .reply: return []
    case .forward: return nil
    }
}

func element(_ set: String, _ address: String, _ seconds: UInt32) -> DNSSetElement {
    DNSSetElement(set: set, address: IPAddress(address)!, timeoutSeconds: seconds)
}

/// Shared addresses, in a profile with bypass.domains: an address answered for a bypassed
/// name and for one that is not stays in the tunnel (the kernel's tunneled set is checked
/// first); the proxy puts every other name's addresses in that set, and counts and names
/// the collisions, driven here by a fake clock.
@Suite struct SharedAddressTests {
    static let ids = (0xc001...0xc0ff).map(UInt64.init)

    @Test func namesNotBypassedFillTheTunneledSetsWhetherListedOrNot() throws {
        var harness = try ProxyHarness(ids: Self.ids, tunneled: true)
        #expect(try filled(resolve(&harness, "www.unlisted.example", records: [a("www.unlisted.example", "198.51.100.30", ttl: 30)]))
                == [element("tunneled_v4", "198.51.100.30", 60)], "an unlisted name, its TTL raised to the floor")
        #expect(try filled(resolve(&harness, "app.corp.example", .aaaa, records: [DNSRecord(name: name("app.corp.example"), ttl: 600, data: .address(IPAddress("2001:db8::7")!))]))
                == [element("route_v6", "2001:db8::7", 600), element("tunneled_v6", "2001:db8::7", 600)], "a route.domains name too")
        #expect(try filled(resolve(&harness, "bank.example", records: [a("bank.example", "198.51.100.31")]))
                == [element("bypass_v4", "198.51.100.31", 300)], "a bypassed name: only its own set")
        // A chain cut short for a name in no list is relayed as before, with what it has.
        let loop = try resolve(&harness, "loop.example", records: [cname("loop.example", "loop.example"), a("loop.example", "198.51.100.32")])
        #expect(filled(loop) == [element("tunneled_v4", "198.51.100.32", 300)])
        #expect(try filled(resolve(&harness, "gone.example", records: [], code: .nameError)) == [], "no address, no fill")
        #expect(harness.proxy.counters.sharedAddresses == 0 && harness.proxy.sharedAddresses(now: harness.now).isEmpty)

        var plain = try ProxyHarness(ids: Self.ids)
        #expect(try filled(resolve(&plain, "www.unlisted.example", records: [a("www.unlisted.example", "198.51.100.30")])) == [],
                "without a bypass list nothing is tunneled by name")
    }

    /// The reproduced case, both orders: corp.test (not bypassed) and a bypassed name on one
    /// address. Either way the address is in the tunneled set, and the collision is counted
    /// once and named.
    @Test(arguments: [true, false]) func aSharedAddressIsACollisionInEitherOrder(bypassedFirst: Bool) throws {
        var harness = try ProxyHarness(ids: Self.ids, tunneled: true)
        let shared = "198.51.100.30"
        func bypassed() throws -> [DNSSetElement]? { try filled(resolve(&harness, "bank.example", records: [a("bank.example", shared, ttl: 900)])) }
        func tunneled() throws -> [DNSSetElement]? { try filled(resolve(&harness, "corp.test", records: [a("corp.test", shared, ttl: 120)])) }
        if bypassedFirst {
            #expect(try bypassed() == [element("bypass_v4", shared, 900)])
            #expect(harness.proxy.counters.sharedAddresses == 0)
            #expect(try tunneled() == [element("tunneled_v4", shared, 120)])
        } else {
            #expect(try tunneled() == [element("tunneled_v4", shared, 120)])
            #expect(harness.proxy.counters.sharedAddresses == 0)
            #expect(try bypassed() == [element("bypass_v4", shared, 900)])
        }
        #expect(harness.proxy.counters.sharedAddresses == 1)
        let collision = try #require(harness.proxy.sharedAddresses(now: harness.now).first)
        #expect(collision.address == IPAddress(shared)! && collision.bypassed == name("bank.example") && collision.tunneled == name("corp.test"))
        #expect(collision.until == harness.now + .seconds(120), "it ends with the element of the name that is not bypassed")

        // The same pair answered again goes on being one collision.
        _ = harness.advance(60)
        _ = try tunneled()
        _ = try bypassed()
        #expect(harness.proxy.counters.sharedAddresses == 1)
        #expect(harness.proxy.sharedAddresses(now: harness.now).first?.until == harness.now + .seconds(120))
    }

    /// A collision ends when the element of the name that is not bypassed expires (the
    /// bypass set alone then decides again), and a new answer begins a new one.
    @Test func aCollisionEndsWhenTheTunneledElementExpires() throws {
        var harness = try ProxyHarness(ids: Self.ids, tunneled: true)
        _ = try resolve(&harness, "corp.test", records: [a("corp.test", "198.51.100.30", ttl: 60)])
        _ = try resolve(&harness, "bank.example", records: [a("bank.example", "198.51.100.30", ttl: 3600)])
        #expect(harness.proxy.sharedAddresses(now: harness.now).count == 1)
        _ = harness.advance(59.9)
        #expect(harness.proxy.sharedAddresses(now: harness.now).count == 1)
        _ = harness.advance(0.1)
        #expect(harness.proxy.sharedAddresses(now: harness.now).isEmpty, "corp.test's element expired at 60 s")
        _ = try resolve(&harness, "bank.example", records: [a("bank.example", "198.51.100.30", ttl: 3500)])
        #expect(harness.proxy.sharedAddresses(now: harness.now).isEmpty && harness.proxy.counters.sharedAddresses == 1, "bypassed alone is no collision")
        _ = try resolve(&harness, "corp.test", records: [a("corp.test", "198.51.100.30", ttl: 60)])
        #expect(harness.proxy.counters.sharedAddresses == 2 && harness.proxy.sharedAddresses(now: harness.now).count == 1)
        // Another name on the bypassed side is another pair.
        _ = try resolve(&harness, "x.cdn.example", records: [a("x.cdn.example", "198.51.100.30", ttl: 60)])
        #expect(harness.proxy.counters.sharedAddresses == 3)
        #expect(harness.proxy.sharedAddresses(now: harness.now).map(\.bypassed) == [name("x.cdn.example")])
    }

    /// The status shows a bounded number of collisions, most recent first.
    @Test func theShownCollisionsAreBounded() throws {
        var harness = try ProxyHarness(ids: Self.ids, tunneled: true)
        for i in 0..<(SharedAddresses.shown + 4) {
            let address = "203.0.113.\(i + 1)"
            _ = try resolve(&harness, "bank.example", records: [a("bank.example", address)])
            _ = try resolve(&harness, "www\(i).shared.example", records: [a("www\(i).shared.example", address)])
        }
        let shown = harness.proxy.sharedAddresses(now: harness.now)
        #expect(shown.count == SharedAddresses.shown && harness.proxy.counters.sharedAddresses == UInt64(SharedAddresses.shown + 4))
        #expect(shown.first?.tunneled == name("www\(SharedAddresses.shown + 3).shared.example"))
    }

    @Test func theTableForgetsWhatExpiredWhenFull() {
        var table = SharedAddresses()
        let start = MonotonicInstant(nanoseconds: 0)
        for i in 0..<SharedAddresses.capacity {
            table.answered(IPAddress.v4(UInt32(i)), name: name("t.example"), bypassed: false, until: start + .seconds(10), now: start)
        }
        // Full, nothing expired yet: a new address is not remembered (no collision seen).
        let early = start + .seconds(5)
        table.answered(IPAddress.v4(0xffff_0001), name: name("early.example"), bypassed: false, until: early + .seconds(60), now: early)
        table.answered(IPAddress.v4(0xffff_0001), name: name("bank.example"), bypassed: true, until: early + .seconds(60), now: early)
        #expect(table.count == 0)
        let later = start + .seconds(11)
        table.answered(IPAddress.v4(0xffff_0000), name: name("late.example"), bypassed: false, until: later + .seconds(60), now: later)
        table.answered(IPAddress.v4(0xffff_0000), name: name("bank.example"), bypassed: true, until: later + .seconds(60), now: later)
        #expect(table.count == 1, "the expired entries made room")
    }
}

/// Re-adding an element never shortens it (the kernel would take the shorter timeout).
@Suite struct ElementLifetimesTests {
    @Test func aShorterTimeoutIsRaisedToWhatTheElementHasLeft() {
        var lifetimes = DNSElementLifetimes()
        var now = MonotonicInstant(nanoseconds: 5_000_000_000)
        let long = [element("route_v4", "192.0.2.1", 300)]
        #expect(lifetimes.lengthened(long, now: now) == long, "nothing known yet")
        lifetimes.added(long, now: now)
        now = now + .milliseconds(100_500)
        #expect(lifetimes.lengthened([element("route_v4", "192.0.2.1", 60)], now: now) == [element("route_v4", "192.0.2.1", 200)],
                "199.5 s left, rounded up")
        #expect(lifetimes.lengthened([element("route_v4", "192.0.2.1", 250)], now: now) == [element("route_v4", "192.0.2.1", 250)], "a longer one stays")
        #expect(lifetimes.lengthened([element("tunneled_v4", "192.0.2.1", 60)], now: now) == [element("tunneled_v4", "192.0.2.1", 60)], "per set")
        now = now + .seconds(200)
        #expect(lifetimes.lengthened([element("route_v4", "192.0.2.1", 60)], now: now) == [element("route_v4", "192.0.2.1", 60)], "expired")
    }

    @Test func expiredEntriesGo() {
        var lifetimes = DNSElementLifetimes()
        let start = MonotonicInstant(nanoseconds: 0)
        lifetimes.added((0..<5000).map { DNSSetElement(set: "s", address: .v4(UInt32($0)), timeoutSeconds: 60) }, now: start)
        #expect(lifetimes.remembered == 5000, "nothing expired yet")
        lifetimes.added((0..<5001).map { DNSSetElement(set: "t", address: .v4(UInt32($0)), timeoutSeconds: 60) }, now: start + .seconds(61))
        #expect(lifetimes.remembered == 5001, "the first 5000 expired and went when the table had doubled")
    }
}
