import Control
import Foundation
import NetTestSupport
import Testing

/// Encrypted DNS against domain rules: the profile's proxy answers Firefox's canary
/// NXDOMAIN, and members' DNS over TLS and QUIC (port 853) are refused at once, none of it
/// on the physical link, unless the policy allows it.
@Suite(.serialized) struct EncryptedDNSTests {
    static func policy(_ interface: String, allow: Bool = false) -> String {
        "[profile.work]\ntunnel.interface = \"\(interface)\"\ndns = [\"10.99.1.1\"]\nbypass.domains = [\"bank.example\"]\n"
            + (allow ? "allow_encrypted_dns = true\n" : "")
    }

    /// The canary is NXDOMAIN for members (A and AAAA, UDP and TCP) and never reaches the
    /// resolver, which would answer it with an address (as a non-member that asks it
    /// directly sees); ordinary names are answered as before.
    @Test func theCanaryIsAnsweredNXDOMAIN() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup) { Self.policy($0[0]) }
        let resolver = try TunnelResolver(s, cleanup: cleanup, records: ["--address=/use-application-dns.net/192.0.2.99"])
        let dnsq = try PythonScript.write("dnsq.py", cleanup: cleanup)
        func ask(member: Bool, _ transport: String, _ server: String, _ name: String, _ type: String = "A") throws -> [String] {
            let prefix = member ? try s.daemon.vpnexec(profile: "work", []) : s.net.client.enter
            return try Command.run(prefix + ["python3", dnsq, transport, server, name, type]).split(separator: "\n").map(String.init)
        }
        #expect(try ask(member: false, "udp", "10.99.1.1", "use-application-dns.net") == ["192.0.2.99"], "the resolver itself answers an address")
        #expect(try ask(member: true, "udp", "127.0.0.53", "use-application-dns.net") == ["RCODE 3"])
        #expect(try ask(member: true, "udp", "192.0.2.53", "use-application-dns.net", "AAAA") == ["RCODE 3"])
        #expect(try ask(member: true, "tcp", "127.0.0.53", "use-application-dns.net") == ["RCODE 3"])
        #expect(try ask(member: true, "udp", "127.0.0.53", "www.corp.example") == ["192.0.2.82"], "an ordinary name is still answered")
        #expect(resolver.queries.filter { $0.contains("use-application-dns.net") }.count == 1, "only the non-member's query reached it: \(resolver.queries)")
        let dns = try #require(try s.daemon.status().profiles[0].dns)
        #expect(dns.canaryAnswered == 3 && dns.failed == 0, "\(dns)")
    }

    /// DoT and DoQ from a member: refused at once (a TCP reset, an ICMP port unreachable),
    /// v4 and v6, and nothing of it on the physical link, where a non-member's attempt is
    /// seen (the control). With allow_encrypted_dns the member reaches the DoT server,
    /// through the tunnel.
    @Test func membersDoTIsRefusedUnlessAllowed() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup) { Self.policy($0[0]) }
        _ = try Services(in: s.net.server, addresses: [Topology.service4, Topology.service6], port: 853, cleanup: cleanup)
        let probe = try PythonScript.write("encdns.py", cleanup: cleanup)
        func attempt(member: Bool, _ transport: String, _ host: String) throws -> String {
            let prefix = member ? try s.daemon.vpnexec(profile: "work", []) : s.net.client.enter
            return try Command.run(prefix + ["python3", probe, transport, host, "853"]).trimmed
        }
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 853", cleanup: cleanup)
        for transport in ["tcp", "udp"] {
            for host in [Topology.service4, Topology.service6] {
                #expect(try attempt(member: true, transport, host) == "refused", "\(transport) to \(host)")
            }
        }
        #expect(try attempt(member: false, "tcp", Topology.serverUplink4) == "refused", "the control: the server's own reset, no one listens there")
        let leaked = try capture.packets("dst host \(Topology.service4) or dst host \(Topology.service6)")
        let control = try capture.count("tcp and dst host \(Topology.serverUplink4)")
        #expect(control >= 1, "the capture sees a non-member's DoT attempt")
        #expect(leaked.isEmpty, "member DoT/DoQ on the physical link: \(leaked)")
        var dns = try #require(try s.daemon.status().profiles[0].dns)
        #expect(dns.encryptedDNS == "refused" && dns.encryptedDNSRefused >= 4, "\(dns)")
        #expect(try s.daemon.vpnctl(["status"]).stdout.contains("encrypted DNS over TLS/QUIC (853) refused"))

        try s.daemon.writePolicy(Self.policy(s.tunnel.clientInterface, allow: true))
        #expect(try s.daemon.vpnctl(["reload"]).status == 0)
        #expect(try attempt(member: true, "tcp", Topology.service4) == "reached \(s.tunnel.clientAddress4)")
        #expect(try attempt(member: true, "udp", Topology.service6) == "reached \(s.tunnel.clientAddress6)")
        dns = try #require(try s.daemon.status().profiles[0].dns)
        #expect(dns.encryptedDNS == "allowed", "\(dns)")
    }

    /// System mode: every process placed nowhere else is a member, so a plain process's
    /// DoT is refused too (the kernel's reset comes back through the classifier the
    /// system profile's packets take, to a local address).
    @Test func systemModeRefusesEveryonesDoT() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false) { Self.policy($0[0]) + "[system]\nprofile = \"work\"\n" }
        // The tunnel's own socket carries a mark of its own, which keeps it out of the
        // system profile (as in SystemModeTests).
        try s.net.client.run(["wg", "set", s.tunnel.clientInterface, "fwmark", "0xca6c"])
        try s.daemon.start()
        _ = try Services(in: s.net.server, addresses: [Topology.service4, Topology.service6], port: 853, cleanup: cleanup)
        let probe = try PythonScript.write("encdns.py", cleanup: cleanup)
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 853", cleanup: cleanup)
        for transport in ["tcp", "udp"] {
            #expect(try Command.run(s.net.client.enter + ["python3", probe, transport, Topology.service4, "853"]).trimmed == "refused")
        }
        #expect(try s.connect(to: Topology.service4) == s.tunnel.clientAddress4, "the same process's other traffic is tunneled")
        // The control: a socket with a mark of its own (as a tunnel's) is not the system
        // profile's; its DoT attempt leaves direct and the capture sees it.
        let marked = "import socket\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, 36, 0xca6c)\ns.settimeout(3)\n"
            + "try:\n    s.connect(('\(Topology.serverUplink4)', 853))\nexcept OSError:\n    pass\n"
        try s.net.client.run(["python3", "-c", marked])
        #expect(try capture.count("tcp and dst host \(Topology.serverUplink4)") >= 1, "the capture sees the marked socket's attempt")
        #expect(try capture.packets("dst host \(Topology.service4)").isEmpty)
    }
}
