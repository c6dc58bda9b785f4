import Foundation
import NetTestSupport
import Testing

/// A profile without `dns` resolves through its tunnel's own resolvers (issue 43, item 1):
/// for an interface, the servers the host holds for it (here resolvconf's record, as wg-quick
/// writes it for its `DNS =` line); for a built-in tunnel, its file's `DNS =`. Without any,
/// `vpnctl check`, vpnd and `vpnctl status` say so with the fix; members' queries are
/// refused meanwhile.
@Suite(.serialized) struct TunnelResolversTests {
    /// The shipped example of a profile on an interface, with only what names this host's
    /// interface, users and groups changed; it has no `dns` line.
    static func shippedWorkProfile() throws -> (String) -> String {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../policies/10-work.toml").standardized.path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("dns") }, "the example sets no dns")
        for line in ["tunnel.interface = \"wg0\"", "users = [\"alice\", 1001]", "groups = [\"vpn-work\"]"] {
            #expect(text.contains(line + "\n"), "the example still has \(line)")
        }
        return { interface in
            text.replacing("tunnel.interface = \"wg0\"", with: "tunnel.interface = \"\(interface)\"")
                .replacing("users = [\"alice\", 1001]", with: "users = [1001]").replacing("groups = [\"vpn-work\"]", with: "groups = [\"root\"]")
        }
    }

    /// The README's quickstart profile as written there (a provider's file given to the
    /// built-in engine, no `dns` line), with the file's path, a user of this host and a
    /// tunnel interface of the test's own put in.
    static func quickstartProfile(file: String, interface: String) throws -> String {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../README.md").standardized.path
        let readme = try String(contentsOfFile: path, encoding: .utf8)
        let quickstart = try #require(readme.firstRange(of: "## Quickstart").map { readme[$0.upperBound...] }, "the README has its quickstart")
        let indented = try #require(quickstart.firstRange(of: "```toml\n").flatMap { start in
            quickstart[start.upperBound...].firstRange(of: "```").map { String(quickstart[start.upperBound..<$0.lowerBound]) }
        }, "the quickstart's profile")
        // As a reader copies it out of its list item: without the item's indentation.
        let lines = indented.split(separator: "\n").filter { !$0.allSatisfy(\.isWhitespace) }
        let indentation = lines.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        let block = lines.map { $0.dropFirst(indentation) + "\n" }.joined()
        #expect(!block.split(separator: "\n").contains { $0.hasPrefix("dns") }, "the quickstart sets no dns")
        for line in ["tunnel.wireguard = \"/etc/vpnexec/work.conf\"\n", "users = [\"alice\"]"] {
            #expect(block.contains(line), "the quickstart still has \(line)")
        }
        return block.replacing("/etc/vpnexec/work.conf", with: file).replacing("users = [\"alice\"]", with: "users = [\"root\"]")
            + "tunnel.interface = \"\(interface)\"\n"
    }

    /// resolvconf's record of an interface's servers, as wg-quick makes it (`resolvconf -a
    /// tun.IFACE`, Debian's resolvconf with `tun*` in interface-order): a real file under
    /// /run, of an interface name no host has; what the test made is removed after it.
    final class ResolvconfRecord {
        let path: String
        private var made: [String] = []

        init(interface: String, cleanup: Cleanup) throws {
            path = "/run/resolvconf/interface/tun.\(interface)"
            for directory in ["/run/resolvconf", "/run/resolvconf/interface"] where !FileManager.default.fileExists(atPath: directory) {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                made.insert(directory, at: 0)
            }
            cleanup.add("remove \(path)") { [path, made] in
                try? FileManager.default.removeItem(atPath: path)
                for directory in made { rmdir(directory) }
            }
        }

        func write(_ text: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }
        func remove() throws { try FileManager.default.removeItem(atPath: path) }
    }

    /// The quickstart's profile as shipped, on an interface (wireguard-go here, as wg-quick
    /// brings one up): while the host holds no servers for it, `vpnctl check` warns, vpnd's
    /// log and `vpnctl status` say it as an error with the fix, and a member's query is
    /// refused; once the interface's resolvconf record appears (after vpnd started), members'
    /// names resolve through the tunnel: dnsmasq behind it sees their queries from the
    /// tunnel's address. When the record goes, so do the resolvers.
    @Test func anInterfaceResolvesThroughTheServersTheHostHoldsForIt() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let example = try Self.shippedWorkProfile()
        let s = try Scenario(cleanup: cleanup, start: false) { example($0[0]) }
        let interface = s.tunnel.clientInterface
        let resolver = try TunnelResolver(s, cleanup: cleanup)
        let record = try ResolvconfRecord(interface: interface, cleanup: cleanup)

        let check = try s.daemon.vpnctl(["check", s.daemon.policyDirectory])
        #expect(check.status == 0 && check.stdout.contains("10-test.toml:10:1: warning: profile \"work\" has no dns: its members ask the DNS servers the host holds for \(interface) "),
                "\(check.stdout)\(check.stderr)")
        try s.daemon.start()
        let fix = "set dns = [...] in [profile.work] or give the tunnel's wg-quick file a DNS = line"
        #expect(try s.daemon.status().profiles[0].dns?.serversFrom == "none")
        #expect(try s.daemon.vpnctl(["status"]).stdout.hasPrefix("error: profile work has no DNS resolvers, so its members' names do not resolve (their queries are refused): \(fix)\n"))
        #expect(s.daemon.process?.output.contains("DNS proxy: profile work has no DNS resolvers, so its members' names do not resolve (their queries are refused): \(fix) "
                                                  + "(without dns, the profile asks the servers the host holds for \(interface), from systemd-resolved or resolvconf; it holds none)") == true,
                "\(s.daemon.process?.output ?? "")")
        let dnsq = try PythonScript.write("dnsq.py", cleanup: cleanup)
        let refused = try Command.status(try s.daemon.vpnexec(profile: "work", ["python3", dnsq, "udp", "192.0.2.53", "www.corp.example"]))
        #expect(refused.stdout.trimmed == "RCODE 5", "\(refused.stdout)\(refused.stderr)")
        #expect(try Command.status(try s.daemon.vpnexec(profile: "work", ["getent", "hosts", "www.corp.example"])).status == 2)

        try record.write("# resolv.conf from tun.\(interface)\nnameserver 10.99.1.1\n")
        try eventually("vpnd to read the record") { try s.daemon.status().profiles[0].dns?.serversFrom == "resolvconf" }
        let dns = try #require(try s.daemon.status().profiles[0].dns)
        #expect(dns.servers == ["10.99.1.1"] && dns.serversFile == record.path)
        let resolved = try Command.status(try s.daemon.vpnexec(profile: "work", ["getent", "hosts", "www.corp.example"]))
        #expect(resolved.status == 0 && resolved.stdout.hasPrefix("192.0.2.82 "), "\(resolved.stdout)\(resolved.stderr)")
        #expect(try Command.run(try s.daemon.vpnexec(profile: "work", ["python3", dnsq, "udp", "192.0.2.53", "target.cdn.example"])).trimmed == "192.0.2.81")
        let asked = resolver.queries
        #expect(asked.contains { $0.hasPrefix("query[A] www.corp.example from \(s.tunnel.clientAddress4)") }
                && asked.contains { $0.hasPrefix("query[A] target.cdn.example from \(s.tunnel.clientAddress4)") }, "through the tunnel: \(asked)")
        let text = try s.daemon.vpnctl(["status"]).stdout
        #expect(!text.contains("error:") && text.contains("  dns       proxy: resolvers 10.99.1.1 (from resolvconf \(record.path)); answered "), "\(text)")
        #expect(s.daemon.process?.output.contains("DNS proxy of profile work: resolvers 10.99.1.1 (resolvconf's, \(record.path))") == true)
        let noted = try s.daemon.vpnctl(["check", s.daemon.policyDirectory])
        #expect(noted.status == 0 && noted.stdout.contains("profile work: no dns, its members ask \(interface)'s DNS servers: now 10.99.1.1 (resolvconf's, \(record.path))"),
                "\(noted.stdout)\(noted.stderr)")

        try record.remove()
        try eventually("vpnd to see the record go") { try s.daemon.status().profiles[0].dns?.serversFrom == "none" }
    }

    /// systemd-networkd 252 itself manages the interface with `DNS=` in its .network file and
    /// writes the link's state (/run/systemd/netif/links/IFINDEX, `DNS=`), which vpnd reads
    /// by the interface's index. Both run in a mount namespace of their own with a tmpfs on
    /// /run/systemd (the host's is left alone), in the client's network namespace, which vpnd
    /// is told is the initial one (as it is for a vpnd on a host); networkd keeps the
    /// interface's addresses and routes and leaves vpnd's rules alone, and sees a read-only
    /// /sys (as in a container: no udev to wait for) in a mount namespace of its own.
    @Test func anInterfaceResolvesThroughItsNetworkdLinkDNS() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Scenario.profiles(["work"]))
        let interface = s.tunnel.clientInterface
        let resolver = try TunnelResolver(s, cleanup: cleanup)
        let index = try #require(Int(try s.net.client.run(["ip", "-o", "link", "show", "dev", interface]).prefix { $0 != ":" }))
        let pidFile = NSTemporaryDirectory() + "vx-\(uniqueTag())-networkd.pid", log = NSTemporaryDirectory() + "vx-\(uniqueTag())-networkd.log"
        // The mount namespace is held by a process of its own, and networkd runs on its own
        // (no one's child, setsid, no descriptor of the holder's): as vpnd's child it stalled
        // Foundation's reaping of vpnd (the test hung in waitUntilExit), as dnsmasq did
        // (TunnelResolver).
        let setup = """
            set -e
            mount -t tmpfs tmpfs /run/systemd
            mkdir -p /run/systemd/network /run/systemd/netif /run/systemd/networkd.conf.d
            chown systemd-network:systemd-network /run/systemd/netif
            printf '[Match]\\nName=\(interface)\\n[Network]\\nDNS=10.99.1.1\\nKeepConfiguration=yes\\nLinkLocalAddressing=no\\nIPv6AcceptRA=no\\n' > /run/systemd/network/10-vx.network
            printf '[Network]\\nManageForeignRoutingPolicyRules=no\\nManageForeignRoutes=no\\n' > /run/systemd/networkd.conf.d/10-vx.conf
            (setsid unshare --mount --propagation private sh -c 'mount -t sysfs -o ro sysfs /sys; if [ -d /run/dbus ]; then mount -t tmpfs tmpfs /run/dbus; fi; echo $$ > \(pidFile); exec /usr/lib/systemd/systemd-networkd' < /dev/null > \(log) 2>&1 &)
            exec sleep 100000
            """
        let holder = try BackgroundProcess(s.net.client.enter + ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup], cleanup: cleanup)
        cleanup.add("stop systemd-networkd") {
            if let pid = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap({ Int32($0.trimmed) }) { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(atPath: pidFile)
            try? FileManager.default.removeItem(atPath: log)
        }
        let state = "/proc/\(holder.pid)/root/run/systemd/netif/links/\(index)"
        try eventually("networkd to write the link's DNS=") { ((try? String(contentsOfFile: state, encoding: .utf8)) ?? "").contains("DNS=10.99.1.1") }
        s.daemon.launcher = ["nsenter", "--mount=/proc/\(holder.pid)/ns/mnt", "--"]
        s.daemon.extraArguments = ["--initial-netns", "/proc/self/ns/net"]
        try s.daemon.start()
        try eventually("vpnd to read it") { try s.daemon.status().profiles[0].dns?.serversFrom == "systemd-networkd" }
        let dns = try #require(try s.daemon.status().profiles[0].dns)
        #expect(dns.servers == ["10.99.1.1"] && dns.serversFile == "/run/systemd/netif/links/\(index)", "\(dns)")
        let resolved = try Command.status(try s.daemon.vpnexec(profile: "work", ["getent", "hosts", "www.corp.example"]))
        #expect(resolved.status == 0 && resolved.stdout.hasPrefix("192.0.2.82 "), "\(resolved.stdout)\(resolved.stderr)")
        #expect(resolver.queries.contains { $0.hasPrefix("query[A] www.corp.example from \(s.tunnel.clientAddress4)") }, "through the tunnel: \(resolver.queries)")
        #expect(try s.member() == s.tunnel.clientAddress4, "networkd left the tunnel and vpnd's routing as they were")
    }

    /// The README's quickstart, a built-in tunnel's wg-quick file: without `DNS =`, `vpnctl
    /// check` refuses the policy with the fix at the tunnel key; with it, members' names
    /// resolve through the engine to that server (dnsmasq behind vpn-server sees the
    /// tunnel's address).
    @Test func aBuiltInTunnelResolvesThroughItsFilesDNS() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        _ = try OurTunnel(in: net.server, name: "vx\(net.tag)o", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51950
            Address = 10.79.0.1/24, fd79::1/64
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.79.0.2/32, fd79::2/128
            """)
        try net.server.run(["ip", "addr", "add", "10.99.1.1/32", "dev", "lo"])
        try net.server.run(["ip", "addr", "add", "fd99:1::1/128", "dev", "lo"])
        let resolver = try TunnelResolver(in: net.server, cleanup: cleanup)
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let conf = URL(fileURLWithPath: daemon.policyDirectory + "/../work.conf").standardized.path
        func writeConf(dns: String) {
            FileManager.default.createFile(atPath: conf, contents: Data("""
                [Interface]
                PrivateKey = \(clientKey)
                Address = 10.79.0.2/24, fd79::2/64
                \(dns)
                [Peer]
                PublicKey = \(serverPublic)
                Endpoint = \(Topology.serverUplink4):51950
                AllowedIPs = 0.0.0.0/0, ::/0
                """.utf8), attributes: [.posixPermissions: 0o600])
        }
        writeConf(dns: "")
        try daemon.writePolicy(try Self.quickstartProfile(file: conf, interface: interface))
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }

        let refused = try daemon.vpnctl(["check", daemon.policyDirectory])
        #expect(refused.status == 1 && refused.stderr == "\(daemon.policyDirectory)/10-test.toml:2:20: error: profile work has no DNS resolvers, so its members' names do not resolve "
                + "(their queries are refused): set dns = [...] in [profile.work] or give the tunnel's wg-quick file \(conf) a DNS = line\n", "\(refused.stdout)\(refused.stderr)")
        writeConf(dns: "DNS = 10.99.1.1")
        #expect(try daemon.vpnctl(["check", daemon.policyDirectory]).status == 0)
        try daemon.start()

        let dns = try #require(try daemon.status().profiles[0].dns)
        #expect(dns.servers == ["10.99.1.1"] && dns.serversFrom == "wg-quick" && dns.serversFile == conf)
        try eventually("a member's name to resolve through the engine") {
            try Command.status(try daemon.vpnexec(profile: "work", ["getent", "hosts", "www.corp.example"])).stdout.hasPrefix("192.0.2.82 ")
        }
        #expect(resolver.queries.contains { $0.hasPrefix("query[A] www.corp.example from 10.79.0.2") }, "through the tunnel: \(resolver.queries)")
        #expect(try daemon.vpnctl(["status"]).stdout.contains("  dns       proxy: resolvers 10.99.1.1 (from the tunnel's wg-quick file \(conf)); answered "))
    }
}
