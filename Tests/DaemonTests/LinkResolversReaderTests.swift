import Addresses
import Glibc
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

    /// resolved's link record absent (as unreadable: the file cannot be opened): resolved is
    /// asked over the bus for that index (and only then), before systemd-networkd's file; a record it can read, with or
    /// without servers, is what resolved holds: the bus is not asked.
    @Test func resolvedOverTheBusWhereItsRecordCannotBeRead() throws {
        let d = try Directory()
        final class Asked: @unchecked Sendable { var indexes: [Int32] = [] }
        let asked = Asked()
        var reader = d.reader
        reader.bus = { index in
            asked.indexes.append(index)
            return index == 7 ? [LinkResolvers.BusServer(family: 2, address: [10, 6, 0, 2]), LinkResolvers.BusServer(family: 2, address: [10, 6, 0, 3], port: 853)] : []
        }
        try d.write("netif/links/7", "DNS=10.7.0.1\n")
        try d.write("netif/links/8", "DNS=10.7.0.1\n")
        #expect(reader.read(interface: "tun0", index: 7) == LinkResolvers(servers: [IPAddressText.a("10.6.0.2")], busLink: 7), "absent: asked")
        #expect(reader.read(interface: "tun0", index: 8)?.kind == .networkd, "resolved holds none for 8: networkd's")
        try d.write("resolve/netif/7", "SERVERS=10.6.0.1\n")
        let before = asked.indexes
        #expect(reader.read(interface: "tun0", index: 7)?.kind == .resolved)
        try d.write("resolve/netif/7", "LLMNR=yes\n")
        #expect(reader.read(interface: "tun0", index: 7)?.kind == .networkd, "resolved's record says none")
        #expect(asked.indexes == before, "a readable record is not asked about")
        var inAnotherNamespace = reader
        inAnotherNamespace.byIndex = false
        try FileManager.default.removeItem(atPath: d.path + "/resolve/netif/7")
        #expect(inAnotherNamespace.read(interface: "tun0", index: 7) == nil && asked.indexes == before, "another namespace's index: not asked")
        #expect(asked.indexes.allSatisfy { $0 == 7 || $0 == 8 })
    }

    /// A bus that takes the connection and never answers (a socket nobody accepts on): the
    /// first read waits about ResolvedLinkBus.deadline and gets nothing, the next ones within
    /// the pause return at once; a bus that is not there costs nothing and is not paused.
    @Test func aBusThatNeverAnswersCostsItsDeadlineOnce() throws {
        let path = NSTemporaryDirectory() + "vx-bus-\(UInt32.random(in: 0..<UInt32.max))"
        // SOCK_STREAM (1) by its number: in this file's module build the name is not found
        // (the clang importer gives sys/socket.h's enum to another module that Facts pulls in).
        let listener = socket(AF_UNIX, 1, 0)
        #expect(listener >= 0)
        defer {
            close(listener)
            unlink(path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0 && listen(listener, 8) == 0)

        let hung = ResolvedLinkBus(address: "unix:path=\(path)")
        func timed(_ body: () -> Void) -> Double {
            let start = Date()
            body()
            return Date().timeIntervalSince(start)
        }
        let first = timed { #expect(hung.servers(link: 3) == nil) }
        #expect(first >= 0.2 && first < 0.6, "waited \(first) s")
        let paused = timed { #expect(hung.servers(link: 3) == nil) }
        #expect(paused < 0.05, "paused: \(paused) s")

        let absent = ResolvedLinkBus(address: "unix:path=\(path).none")
        let none = timed {
            #expect(absent.servers(link: 3) == nil)
            #expect(absent.servers(link: 3) == nil)
        }
        #expect(none < 0.05, "\(none) s")
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
