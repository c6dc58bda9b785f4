import Control
import Foundation
import NetTestSupport
import Testing

/// IPv6 turned off on the client (`disable_ipv6` for every interface, lo and the tunnel
/// included, as guides against IPv6 leaks advise). The kernel then refuses an IPv6 address
/// on `lo` and an IPv6 route through an interface; vpnd asked for both and never came up,
/// leaving its killswitch table in place: every member cut off. Now vpnd plans neither,
/// and members are served over IPv4 as before.
@Suite(.serialized) struct IPv6OffTests {
    @Test func vpndServesMembersWithIPv6Off() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: { DNSTests.policy($0) })
        _ = try TunnelResolver(s, cleanup: cleanup)
        try s.net.client.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
        #expect(try s.net.client.run(["cat", "/proc/sys/net/ipv6/conf/lo/disable_ipv6"]).trimmed == "1")
        try s.daemon.start()

        #expect(try s.member() == s.tunnel.clientAddress4, "a member's connection goes through the tunnel")
        #expect(try s.connect() == Topology.clientAddress4, "a non-member's does not")
        // DNS: the member's query, sent to any address, is answered by its proxy through the
        // tunnel, and the bypassed name's address is in the profile's set before the answer.
        #expect(try DNSTests().ask(s, member: true, "udp", "192.0.2.53", "bank.example") == ["192.0.2.80"])
        #expect(try s.net.client.run(["nft", "list", "set", "inet", "vpnexec", "bypass_dns4_work"]).contains("192.0.2.80"))
        let status = try s.daemon.status()
        #expect(status.dnsSteering?.state == "routed" && status.dnsSteering?.ipv6Refused == true && status.dnsSteering?.addresses == ["127.77.0.0"],
                "\(String(describing: status.dnsSteering))")
        // Nothing IPv6 of ours is there: no steering address, and the profile's IPv6 table
        // holds only its unreachable routes.
        #expect(!(try s.net.client.run(["ip", "-6", "addr", "show", "dev", "lo"])).contains("fd7f:4d::"))
        let routes = try s.net.client.run(["ip", "-6", "route", "show", "table", "all", "proto", "118"])
        #expect(!routes.isEmpty && routes.split(separator: "\n").allSatisfy { $0.hasPrefix("unreachable ") }, "\(routes)")

        // IPv6 back on, vpnd running: followed at its next read of the facts, and a member's
        // IPv6 query reaches its proxy again.
        try s.net.client.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0"])
        try eventually("the IPv6 steering address back on lo") {
            try s.net.client.run(["ip", "-6", "addr", "show", "dev", "lo"]).contains("fd7f:4d::1")
        }
        #expect(try DNSTests().ask(s, member: true, "udp", "2001:db8:80::53", "bank.example", "AAAA") == ["2001:db8:80::80"])
        #expect(try s.daemon.status().dnsSteering?.ipv6Refused == false)
        // Over TCP too: the connection, rewritten to the proxy on ::1, finds it listening
        // there (it could not when vpnd started with IPv6 off).
        #expect(try DNSTests().ask(s, member: true, "tcp", "2001:db8:80::53", "bank.example", "AAAA") == ["2001:db8:80::80"])
    }
}
