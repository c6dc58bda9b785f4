import Control
import Foundation
import NetTestSupport
import Testing

/// Addresses shared by a bypassed name and another: the tunnel wins for members, in either
/// order of the two lookups; for non-members the route lists decide (bypass lists are
/// members' holes). The profile's resolver is dnsmasq behind the tunnel; the service on
/// the shared address reports the source it saw (the tunnel's address, or the physical).
@Suite(.serialized) struct SharedAddressRoutingTests {
    static let shared = "192.0.2.30", bypassedOnly = "192.0.2.31"

    /// The scenario, its resolver answering corp.test and bankshare.test with one address
    /// (and bankonly.test with another), and the services on both addresses.
    static func setUp(_ cleanup: Cleanup, policy extra: String) throws -> Scenario {
        let s = try Scenario(cleanup: cleanup) { "[profile.work]\ntunnel.interface = \"\($0[0])\"\ndns = [\"10.99.1.1\"]\n" + extra }
        _ = try TunnelResolver(s, cleanup: cleanup, records: [
            "--host-record=corp.test,\(shared)", "--host-record=bankshare.test,\(shared)", "--host-record=bankonly.test,\(bypassedOnly)",
            "--local-ttl=600",
        ])
        for address in [shared, bypassedOnly] {
            try s.net.server.run(["ip", "addr", "add", "\(address)/32", "dev", "lo"])
            try s.net.wan.run(["ip", "route", "add", "\(address)/32", "via", Topology.serverUplink4])
        }
        _ = try Services(in: s.net.server, addresses: [shared, bypassedOnly], port: 8080, cleanup: cleanup)
        return s
    }

    static func resolve(_ s: Scenario, _ name: String) throws -> [String] {
        let dnsq = try PythonScript.write("dnsq.py", cleanup: s.cleanup)
        return try Command.run(try s.daemon.vpnexec(profile: "work", ["python3", dnsq, "udp", "127.0.0.53", name])).split(separator: "\n").map(String.init)
    }

    /// The reproduced case: a member resolves corp.test (not bypassed) and bankshare.test
    /// (bypassed), one address; its next connection to that address goes through the
    /// tunnel, whichever name it asked first. A bypassed name alone still goes direct.
    @Test(arguments: [true, false]) func aSharedAddressStaysInTheTunnel(bypassedFirst: Bool) throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Self.setUp(cleanup, policy: "bypass.domains = [\"bankshare.test\", \"bankonly.test\"]\n")
        #expect(try s.member(to: Self.shared) == s.tunnel.clientAddress4, "before any answer: tunneled")
        #expect(try Self.resolve(s, "bankonly.test") == [Self.bypassedOnly])
        #expect(try s.member(to: Self.bypassedOnly) == Topology.clientAddress4, "a bypassed name of its own goes direct")

        if bypassedFirst {
            #expect(try Self.resolve(s, "bankshare.test") == [Self.shared])
            #expect(try s.member(to: Self.shared) == Topology.clientAddress4, "bypassed, as long as no other name shares it")
            #expect(try Self.resolve(s, "corp.test") == [Self.shared])
        } else {
            #expect(try Self.resolve(s, "corp.test") == [Self.shared])
            #expect(try Self.resolve(s, "bankshare.test") == [Self.shared])
        }
        #expect(try s.member(to: Self.shared) == s.tunnel.clientAddress4, "corp.test's connection arrives through the tunnel")
        #expect(try s.member(to: Self.bypassedOnly) == Topology.clientAddress4)

        let dns = try #require(try s.daemon.status().profiles[0].dns)
        #expect(dns.sharedAddresses == 1, "\(dns)")
        #expect(dns.sharedNow.map { "\($0.address) \($0.bypassed) \($0.tunneled)" } == ["\(Self.shared) bankshare.test corp.test"], "\(dns.sharedNow)")
        #expect(dns.setSizes.tunneled4 == 1 && dns.setSizes.bypass4 == 2, "\(dns.setSizes)")
        let text = try s.daemon.vpnctl(["status"]).stdout
        #expect(text.contains("shared    1 address answered") && text.contains("\(Self.shared) (bankshare.test with corp.test,"), "\(text)")
    }

    /// Non-members: bypass lists are not theirs, route lists are: an address a member's
    /// lookup put in both the bypass set and a route.domains set takes a non-member's new
    /// connection into the tunnel; the member's goes there too (its proxy answered a name
    /// it does not bypass).
    @Test func forNonMembersTheRouteListWins() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Self.setUp(cleanup, policy: "bypass.domains = [\"bankshare.test\"]\nroute.domains = [\"corp.test\"]\n")
        #expect(try Self.resolve(s, "bankshare.test") == [Self.shared])
        #expect(try s.connect(to: Self.shared) == Topology.clientAddress4, "a non-member: bypass sets are not its business, nothing routes it")
        #expect(try s.member(to: Self.shared) == Topology.clientAddress4)
        #expect(try Self.resolve(s, "corp.test") == [Self.shared])
        #expect(try s.connect(to: Self.shared) == s.tunnel.clientAddress4, "route.domains: the non-member's new connection is tunneled")
        #expect(try s.member(to: Self.shared) == s.tunnel.clientAddress4)
        #expect(try s.daemon.status().profiles[0].dns?.sharedAddresses == 1)
    }
}
