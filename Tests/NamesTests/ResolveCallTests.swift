import Addresses
import DNS
import DomainNames
import Names
import XCTest
import JSON

final class ResolveCallTests: XCTestCase {
    private func read(_ text: String) -> Result<ResolveCall, VarlinkError> { ResolveCall.read(Array(text.utf8)) }

    /// As nss-resolve 252 writes them (gethostbyname4: AF_UNSPEC; gethostbyname3: the family).
    func testReadsNssResolveCalls() {
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"tunneled.test","flags":0}}"#),
                       .success(.hostname(.init(name: "tunneled.test"))))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"a.test","family":10,"flags":4096,"ifindex":3}}"#),
                       .success(.hostname(.init(name: "a.test", family: .ipv6, flags: 4096, ifindex: 3))))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveAddress","parameters":{"family":2,"address":[192,0,2,7],"flags":0}}"#),
                       .success(.address(.init(address: IPAddress("192.0.2.7")!))))
    }

    func testRefusesWhatResolvedRefuses() {
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveRecord","parameters":{"name":"x","type":1}}"#),
                       .failure(.methodNotFound("io.systemd.Resolve.ResolveRecord")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"a.test","family":7}}"#), .failure(.invalidParameter("family")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"family":2}}"#), .failure(.invalidParameter("name")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"a..b"}}"#), .failure(.invalidParameter("name")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"a b"}}"#), .failure(.invalidParameter("name")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"a.test","flags":-1}}"#), .failure(.invalidParameter("flags")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"a.test","ifindex":-2}}"#), .failure(.invalidParameter("ifindex")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"a.test","extra":1}}"#), .failure(.invalidParameter("extra")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","oneway":true,"parameters":{"name":"a.test"}}"#), .failure(.invalidParameter("oneway")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveAddress","parameters":{"family":2,"address":[1,2,3]}}"#), .failure(.invalidParameter("address")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveAddress","parameters":{"family":2,"address":[1,2,3,256]}}"#), .failure(.invalidParameter("address")))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveAddress","parameters":{"address":[1,2,3,4]}}"#), .failure(.invalidParameter("family")))
        XCTAssertEqual(read(String(repeating: "a", count: 1000)), .failure(.protocolViolation))
        XCTAssertEqual(read(#"{"method":"io.systemd.Resolve.ResolveHostname","method":"x"}"#), .failure(.protocolViolation))
        XCTAssertEqual(read(#"["method"]"#), .failure(.protocolViolation))
        XCTAssertEqual(read(String(repeating: "[", count: 40) + String(repeating: "]", count: 40)), .failure(.protocolViolation))
    }

    func testErrorRepliesAreResolvedsNames() {
        XCTAssertEqual(VarlinkError.noSuchResourceRecord.reply?.encoded, #"{"error":"io.systemd.Resolve.NoSuchResourceRecord","parameters":{}}"#)
        XCTAssertEqual(VarlinkError.dnsError(rcode: 3).reply?.encoded, #"{"error":"io.systemd.Resolve.DNSError","parameters":{"rcode":3}}"#)
        XCTAssertEqual(VarlinkError.methodNotFound("x.Y").reply?.encoded, #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"x.Y"}}"#)
        XCTAssertNil(VarlinkError.protocolViolation.reply)
    }

    func testFraming() {
        var reader = VarlinkReader()
        reader.append(Array("{\"a\":1}".utf8) + [0] + Array("{\"b\"".utf8))
        XCTAssertEqual(reader.next(), Array("{\"a\":1}".utf8))
        XCTAssertNil(reader.next())
        reader.append(Array(":2}".utf8) + [0])
        XCTAssertEqual(reader.next(), Array("{\"b\":2}".utf8))
        var long = VarlinkReader()
        long.append([UInt8](repeating: 0x20, count: VarlinkReader.maxMessage + 1))
        XCTAssertNil(long.next())
        XCTAssertTrue(long.overflowed)
        XCTAssertEqual(VarlinkWriter.frame(.object([("x", .string("a\"\n"))])), Array(#"{"x":"a\"\n"}"#.utf8) + [0])
    }

    func testJSON() throws {
        XCTAssertEqual(try JSONValue(parsing: Array(#" {"a": [1, -2, 2.5, true, null, "\u00e9\ud83d\ude00"]} "#.utf8)),
                       .object([("a", .array([.integer(1), .integer(-2), .double(2.5), .bool(true), .null, .string("é😀")]))]))
        for bad in ["", "{", "[1,]", "01", "\"\u{01}\"", "\"\\ud800\"", "{\"a\":1}x", "tru", "1.", "-", "1e999", "-1e400"] {
            XCTAssertThrowsError(try JSONValue(parsing: Array(bad.utf8)), bad)
        }
    }
}

final class ResolveLookupTests: XCTestCase {
    private func failure(_ lookup: ResolveLookup) -> VarlinkError? {
        if case let .failure(error)? = lookup.reply { return error }
        return nil
    }

    private func answer(to query: [UInt8], code: UInt8 = 0, _ records: [DNSRecord]) -> [UInt8] {
        var message = try! DNSMessage(parsing: query)
        message.header.isResponse = true
        message.header.responseCode = DNSResponseCode(rawValue: code)
        message.answers = records
        return message.encoded()
    }

    private func name(_ text: String) -> DomainName { DomainName(text)! }

    func testHostnameAsksBothFamiliesAndAnswersWithTheChain() throws {
        var lookup = ResolveLookup(.hostname(.init(name: "www.tunneled.test")))
        XCTAssertEqual(lookup.queries.count, 2)
        let questions = try lookup.queries.map { try DNSMessage(parsing: $0).questions }
        XCTAssertEqual(questions, [[DNSQuestion(name: name("www.tunneled.test"), type: .a)], [DNSQuestion(name: name("www.tunneled.test"), type: .aaaa)]])
        XCTAssertTrue(try DNSMessage(parsing: lookup.queries[0]).header.recursionDesired)
        lookup.receive(answer(to: lookup.queries[1], []), for: 1)
        XCTAssertNil(lookup.reply)
        lookup.receive(answer(to: lookup.queries[0], [
            DNSRecord(name: name("www.tunneled.test"), ttl: 60, data: .cname(name("host.tunneled.test"))),
            DNSRecord(name: name("host.tunneled.test"), ttl: 60, data: .address(IPAddress("198.51.100.10")!)),
            DNSRecord(name: name("other.test"), ttl: 60, data: .address(IPAddress("203.0.113.1")!)),
        ]), for: 0)
        XCTAssertEqual(try lookup.reply?.get().encoded,
                       #"{"parameters":{"addresses":[{"family":2,"address":[198,51,100,10]}],"name":"host.tunneled.test","flags":1}}"#)
    }

    func testFamilyAndErrors() throws {
        var v6 = ResolveLookup(.hostname(.init(name: "a.test", family: .ipv6)))
        XCTAssertEqual(try v6.queries.map { try DNSMessage(parsing: $0).questions[0].type }, [.aaaa])
        v6.receive(answer(to: v6.queries[0], [DNSRecord(name: name("A.TEST"), ttl: 1, data: .address(IPAddress("2001:db8::1")!))]), for: 0)
        XCTAssertEqual(try v6.reply?.get().encoded,
                       #"{"parameters":{"addresses":[{"family":10,"address":[32,1,13,184,0,0,0,0,0,0,0,0,0,0,0,1]}],"name":"a.test","flags":1}}"#)

        var missing = ResolveLookup(.hostname(.init(name: "missing.test")))
        missing.receive(answer(to: missing.queries[0], code: 3, []), for: 0)
        missing.receive(answer(to: missing.queries[1], code: 3, []), for: 1)
        XCTAssertEqual(failure(missing), .dnsError(rcode: 3))

        var empty = ResolveLookup(.hostname(.init(name: "empty.test")))
        empty.receive(answer(to: empty.queries[0], []), for: 0)
        empty.receive(nil, for: 1)
        XCTAssertEqual(failure(empty), .queryTimedOut)

        var refused = ResolveLookup(.hostname(.init(name: "r.test", family: .ipv4)))
        refused.receive(answer(to: refused.queries[0], code: 5, []), for: 0)
        XCTAssertEqual(failure(refused), .dnsError(rcode: 5))

        var nothing = ResolveLookup(.hostname(.init(name: "n.test", family: .ipv4)))
        nothing.receive(answer(to: nothing.queries[0], []), for: 0)
        XCTAssertEqual(failure(nothing), .noSuchResourceRecord)
    }

    /// Queries offer 1232 bytes (EDNS); a truncated answer is asked again over TCP, once.
    func testTruncatedAnswersAreAskedAgainOverTCP() throws {
        var lookup = ResolveLookup(.hostname(.init(name: "many.test", family: .ipv4)))
        XCTAssertEqual(try DNSMessage(parsing: lookup.queries[0]).edns?.udpPayloadSize, 1232)
        var truncated = try DNSMessage(parsing: answer(to: lookup.queries[0], []))
        truncated.header.isTruncated = true
        XCTAssertTrue(lookup.receive(truncated.encoded(), for: 0), "ask again over TCP")
        XCTAssertNil(lookup.reply)
        XCTAssertFalse(lookup.receive(truncated.encoded(), for: 0), "once: the second truncated answer is taken")
        XCTAssertEqual(failure(lookup), .noSuchResourceRecord)
    }

    func testAnsweredLocally() throws {
        let literal = ResolveLookup(.hostname(.init(name: "192.0.2.1")))
        XCTAssertTrue(literal.queries.isEmpty)
        XCTAssertEqual(try literal.reply?.get().encoded, #"{"parameters":{"addresses":[{"family":2,"address":[192,0,2,1]}],"name":"192.0.2.1","flags":524288}}"#)
        let local = ResolveLookup(.hostname(.init(name: "LocalHost", family: .ipv4)))
        XCTAssertEqual(try local.reply?.get().encoded, #"{"parameters":{"addresses":[{"family":2,"address":[127,0,0,1]}],"name":"LocalHost","flags":524288}}"#)
        let wrongFamily = ResolveLookup(.hostname(.init(name: "::1", family: .ipv4)))
        XCTAssertEqual(failure(wrongFamily), .noSuchResourceRecord)
    }

    func testAddressAsksPTR() throws {
        var lookup = ResolveLookup(.address(.init(address: IPAddress("192.0.2.7")!)))
        XCTAssertEqual(try DNSMessage(parsing: lookup.queries[0]).questions, [DNSQuestion(name: name("7.2.0.192.in-addr.arpa"), type: .ptr)])
        let target = name("host.example")
        lookup.receive(answer(to: lookup.queries[0], [DNSRecord(name: name("7.2.0.192.in-addr.arpa"), ttl: 5, data: .opaque(.ptr, target.wire))]), for: 0)
        XCTAssertEqual(try lookup.reply?.get().encoded, #"{"parameters":{"names":[{"name":"host.example"}],"flags":1}}"#)
        let v6 = ResolveLookup(.address(.init(address: IPAddress("2001:db8::1")!)))
        XCTAssertEqual(try DNSMessage(parsing: v6.queries[0]).questions[0].name,
                       name("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"))
    }
}

final class NameFollowingCheckTests: XCTestCase {
    func testHostsSources() {
        XCTAssertEqual(NameFollowingCheck.hostsSources("passwd: files\nhosts:  files mymachines resolve [!UNAVAIL=return] dns myhostname # comment\n"),
                       ["files", "mymachines", "resolve", "dns", "myhostname"])
        XCTAssertEqual(NameFollowingCheck.hostsSources("# hosts: resolve\nhosts\t:\tfiles dns\n"), ["files", "dns"])
        XCTAssertEqual(NameFollowingCheck.hostsSources("passwd: files\n"), [])
    }

    func testWarnsOnlyWhereTheKernelCannotFollow() {
        let fedora = "hosts: files myhostname resolve [!UNAVAIL=return] dns\n"
        XCTAssertEqual(NameFollowingCheck.warnings(followed: true, nsswitch: fedora, nscdRunning: true), [])
        let warnings = NameFollowingCheck.warnings(followed: false, nsswitch: fedora, nscdRunning: true)
        XCTAssertEqual(warnings.count, 2)
        XCTAssertTrue(warnings[0].hasPrefix("warning: /etc/nsswitch.conf's hosts line names resolve:") && warnings[0].hasSuffix("(hosts: files dns)"), warnings[0])
        XCTAssertTrue(warnings[1].hasPrefix("warning: nscd runs:"), warnings[1])
        XCTAssertEqual(NameFollowingCheck.warnings(followed: false, nsswitch: "hosts: files dns\n", nscdRunning: false), [])
        XCTAssertEqual(NameFollowingCheck.warnings(followed: false, nsswitch: nil, nscdRunning: false), [])
    }
}
