import Addresses
import Facts
import Testing

/// The search domains trusted-network rules compare: resolv.conf(5)'s last `search` or
/// `domain` line wins; names compare in lower case without the trailing dot.
@Suite struct ResolvConfSearchDomainsTests {
    @Test func lastSearchOrDomainLineWins() {
        #expect(NetworkFactsReader.searchDomains(resolvConf: "nameserver 127.0.0.53\nsearch Corp.Example. lan\noptions edns0\n") == ["corp.example", "lan"])
        #expect(NetworkFactsReader.searchDomains(resolvConf: "search a.example\ndomain\tb.example # comment\n") == ["b.example"])
        #expect(NetworkFactsReader.searchDomains(resolvConf: "# search commented.example\nnameserver 192.0.2.53\n") == [])
        #expect(NetworkFactsReader.searchDomains(resolvConf: "") == [])
    }
}
