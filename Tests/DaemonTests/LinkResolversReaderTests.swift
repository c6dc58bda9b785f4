import Addresses
import Foundation
import Facts
import Plan
import Testing

/// The host's DNS servers for an interface, read from the places systemd-resolved,
/// systemd-networkd and resolvconf keep them (here a directory of the test's own): the
/// first place with servers wins; the files named by index only where that index names the
/// interface (`byIndex`).
@Suite struct LinkResolversReaderTests {
    final class Directory {
        let path = NSTemporaryDirectory() + "vx-linkdns-\(UInt32.random(in: 0..<UInt32.max))"
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: path) }

        func write(_ relative: String, _ text: String) throws {
            let file = path + "/" + relative
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: file, atomically: true, encoding: .utf8)
        }

        var reader: LinkResolversReader {
            var reader = LinkResolversReader()
            reader.resolvedDirectory = path + "/resolve/netif"
            reader.networkdDirectory = path + "/netif/links"
            reader.resolvconfDirectories = [path + "/resolvconf/interface", path + "/resolvconf/interfaces"]
            return reader
        }
    }

    @Test func resolvedThenNetworkdThenResolvconf() throws {
        let d = try Directory()
        #expect(d.reader.read(interface: "tun0", index: 7) == nil, "nothing anywhere")
        try d.write("resolvconf/interface/tun0.openvpn", "nameserver 10.8.0.1\n")
        try d.write("resolvconf/interface/tun.tun0", "nameserver 10.8.0.2\nnameserver 10.8.0.1\n")
        try d.write("resolvconf/interface/tun01", "nameserver 10.8.0.9\n")
        try d.write("resolvconf/interface/eth0.dhclient", "nameserver 192.168.1.1\n")
        #expect(d.reader.read(interface: "tun0", index: 7) == LinkResolvers(servers: [IPAddressText.a("10.8.0.2"), IPAddressText.a("10.8.0.1")], kind: .resolvconf,
                                                                             file: d.path + "/resolvconf/interface/tun.tun0"), "its records in name order, another's not")
        try d.write("netif/links/7", "ADMIN_STATE=configured\nDNS=\n")
        #expect(d.reader.read(interface: "tun0", index: 7)?.kind == .resolvconf, "a link file without servers does not count")
        try d.write("netif/links/7", "ADMIN_STATE=configured\nDNS=10.7.0.1\n")
        #expect(d.reader.read(interface: "tun0", index: 7) == LinkResolvers(servers: [IPAddressText.a("10.7.0.1")], kind: .networkd, file: d.path + "/netif/links/7"))
        #expect(d.reader.read(interface: "tun0", index: 8)?.kind == .resolvconf, "another index is another link")
        try d.write("resolve/netif/7", "# This is private data. Do not parse.\nSERVERS=10.6.0.1#dns.example\n")
        #expect(d.reader.read(interface: "tun0", index: 7) == LinkResolvers(servers: [IPAddressText.a("10.6.0.1")], kind: .resolved, file: d.path + "/resolve/netif/7"))
        var inAnotherNamespace = d.reader
        inAnotherNamespace.byIndex = false
        #expect(inAnotherNamespace.read(interface: "tun0", index: 7)?.kind == .resolvconf, "an index of another namespace names no link of this one")
        #expect(d.reader.read(interface: "tun0", index: nil)?.kind == .resolvconf, "an interface that is not there has no index")
    }

    @Test func openresolvsDirectory() throws {
        let d = try Directory()
        try d.write("resolvconf/interfaces/wg0", "nameserver fd00::53\n")
        #expect(d.reader.read(interface: "wg0", index: nil)?.servers.map(\.description) == ["fd00::53"])
    }

    @Test func ownNamespace() {
        #expect(LinkResolversReader.inNamespace("/proc/self/ns/net"))
        #expect(LinkResolversReader.inNamespace("/nonexistent"), "not known: as the initial one")
    }
}

enum IPAddressText {
    static func a(_ text: String) -> IPAddress { IPAddress(text)! }
}
