import Testing
@testable import DNS

/// Firefox's canary: a proxy with domain lists answers NXDOMAIN itself for
/// use-application-dns.net (and below it), so Firefox's default DoH stays off; every other
/// name is forwarded as before, and a proxy without lists forwards the canary too.
@Suite struct CanaryDomainTests {
    @Test func theCanaryIsAnsweredNXDOMAINByAProxyWithLists() throws {
        var harness = try ProxyHarness(ids: SharedAddressTests.ids)
        for (text, type) in [("use-application-dns.net", DNSRecordType.a), ("USE-Application-DNS.net.", .a), ("use-application-dns.net", .aaaa),
                             ("probe.use-application-dns.net", .a)] {
            let reply = try #require(replied(harness.query(query(text, type, id: 0x4242, edns: true), from: "firefox")), "\(text) was forwarded")
            #expect(reply.client == "firefox" && reply.message.header.id == 0x4242 && reply.message.header.responseCode == .nameError)
            #expect(reply.message.header.isResponse && reply.message.header.recursionAvailable)
            #expect(reply.message.questions == [DNSQuestion(name: name(text), type: type)], "the question as asked")
            #expect(reply.message.edns != nil)
        }
        #expect(harness.proxy.counters.canaryAnswered == 4 && harness.proxy.counters.forwarded == 0 && harness.proxy.counters.failed == 0)
        // Over TCP too.
        let tcp = harness.query(query("use-application-dns.net", id: 1), from: "firefox", over: .tcp)
        #expect(replied(tcp)?.transport == .tcp)

        for text in ["application-dns.net", "xuse-application-dns.net", "use-application-dns.net.example", "firefox.com"] {
            #expect(forwarded(harness.query(query(text, id: 2), from: "firefox")) != nil, "\(text) is an ordinary name")
        }
        // And an ordinary name is still answered.
        #expect(try filled(resolve(&harness, "mozilla.org", records: [a("mozilla.org", "192.0.2.44")])) == [])
    }

    @Test func aProxyWithoutListsForwardsTheCanary() throws {
        var harness = try ProxyHarness(lists: false)
        #expect(forwarded(harness.query(query("use-application-dns.net", id: 3), from: "c")) != nil)
        #expect(harness.proxy.counters.canaryAnswered == 0)
    }
}
