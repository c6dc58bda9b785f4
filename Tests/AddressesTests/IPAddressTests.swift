import Addresses
import Testing

@Suite struct IPAddressTests {
    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("2001:db8::1", "2001:db8::1"), ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        ("::", "::"), ("::1", "::1"), ("fe80::", "fe80::"), ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"), ("::ffff:192.0.2.1", "::ffff:c000:201"),
        ("FD00:20::", "fd00:20::"),
    ])
    func parsesAndPrints(input: String, printed: String) throws {
        let address = try #require(IPAddress(input))
        #expect(address.description == printed)
        #expect(IPAddress(bytes: address.bytes) == address)
    }

    @Test(arguments: ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.-4", "::1::", "1:2:3:4:5:6:7:8:9",
                      "12345::", ":1", "1:", "g::", "1.2.3.4::", "1:2:3:4:5:6:7::8:9", " 1.2.3.4"])
    func rejects(input: String) {
        #expect(IPAddress(input) == nil)
    }

    @Test func prefixes() throws {
        let prefix = try #require(IPPrefix("10.20.3.4/16"))
        #expect(prefix.network.description == "10.20.0.0/16")
        #expect(prefix.contains(IPAddress("10.20.255.1")!))
        #expect(!prefix.contains(IPAddress("10.21.0.1")!))
        #expect(IPPrefix("fd00:20::1/48")!.network.description == "fd00:20::/48")
        #expect(IPPrefix("2001:db8::/129") == nil)
        #expect(IPPrefix("10.0.0.0/33") == nil)
        #expect(IPPrefix("10.0.0.0/") == nil)
        #expect(IPPrefix("192.0.2.7")!.length == 32)
        #expect(IPPrefix.defaultRoute(ipv4: false).description == "::/0")
    }
}
