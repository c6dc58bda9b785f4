import Control
import Foundation
import NetTestSupport
import Testing

/// System mode (`[system] profile`): every process nobody placed is the profile's member,
/// its DNS included; the bypass slice (vpnexec --bypass, bypass.executables) goes direct.
@Suite(.serialized) struct SystemModeTests {
    /// Proof 5: a process started without vpnexec leaves through the tunnel and asks the
    /// profile's resolver through it; a bypassed one (a listed program, and `vpnexec
    /// --bypass` by an allowed user) goes direct, IPv6 too (neighbour discovery still works
    /// on the link); a user the policy does not name is refused. With the tunnel down the
    /// unbypassed process and its DNS are blocked: not one of their packets on the physical
    /// link, while a bypassed process's are (the control).
    @Test func everyProcessNobodyPlacedIsTunneled() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let allowed = try TestUser("vxb\(tag)", cleanup: cleanup)
        let other = try TestUser("vxn\(tag)", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup, start: false, policy: Scenario.profiles(["work"]))
        let bypassed = try ExecutableExceptionTests.program("bypassed-python", in: "/tmp/vx-\(s.net.tag)/bin")
        try s.daemon.writePolicy("""
            [profile.work]
            tunnel.interface = "\(s.tunnel.clientInterface)"
            dns = ["10.99.1.1"]
            bypass.executables = ["\(bypassed)"]
            [system]
            profile = "work"
            bypass.users = ["\(allowed.name)"]
            """)
        // The tunnel's own socket carries a mark of its own (as wg-quick sets for a full
        // tunnel), which keeps it out of the system profile.
        try s.net.client.run(["wg", "set", s.tunnel.clientInterface, "fwmark", "0xca6c"])
        // The users' sessions, where a user may take its own processes from.
        let root = try TestCgroups.cgroupRoot()
        let madeUserSlice = !FileManager.default.fileExists(atPath: "\(root)/user.slice")
        var sessions: [String: String] = [:]
        for user in [allowed, other] {
            let uid = try Command.run(["id", "-u", user.name]).trimmed
            sessions[user.name] = "user.slice/user-\(uid).slice/session-vx\(tag).scope"
            try FileManager.default.createDirectory(atPath: "\(root)/\(sessions[user.name]!)", withIntermediateDirectories: true)
            cleanup.add("remove \(user.name)'s session cgroup") { try TestCgroups.removeTree("user.slice/user-\(uid).slice") }
        }
        cleanup.add("remove user.slice") { if madeUserSlice { try TestCgroups.removeTree("user.slice") } }
        try s.daemon.start()
        let resolver = try TunnelResolver(s, cleanup: cleanup)
        let vpnexec = try Binaries.path("vpnexec")
        func bypassing(_ user: TestUser?) -> [String] {
            guard let user else { return s.net.client.enter + [vpnexec, "--socket", s.daemon.socketPath, "--bypass", "--"] }
            return s.net.client.enter + ["sh", "-c", "echo $$ > \(root)/\(sessions[user.name]!)/cgroup.procs && exec \"$@\"", "sh"]
                + TestUser.become(user.name) + [vpnexec, "--socket", s.daemon.socketPath, "--bypass", "--"]
        }
        let dnsq = try PythonScript.write("dnsq.py", cleanup: cleanup)
        let dns53 = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)

        #expect(try s.connect() == s.tunnel.clientAddress4, "a process started without vpnexec is tunneled")
        #expect(try s.connect(to: Topology.service6) == s.tunnel.clientAddress6)
        #expect(try Command.run(s.net.client.enter + ["python3", dnsq, "udp", "192.0.2.53", "www.corp.example"]).trimmed == "192.0.2.82")
        #expect(try Command.run(s.net.client.enter + ["python3", dnsq, "tcp", "127.0.0.53", "www.corp.example"]).trimmed == "192.0.2.82")
        #expect(resolver.queries.filter { $0.hasSuffix("from \(s.tunnel.clientAddress4)") }.count >= 2, "\(resolver.queries)")

        let plainShell = try Command.run(s.net.client.enter + ["sh", "-c", "\(bypassed) \(s.probe) tcp \(Topology.service4) 8080"]).trimmed
        #expect(plainShell == Topology.clientAddress4, "a bypassed program goes direct wherever it starts")
        try s.net.client.run(["ip", "-6", "neigh", "flush", "all"])
        #expect(try s.connect(through: bypassing(nil)) == Topology.clientAddress4, "vpnexec --bypass as root")
        #expect(try s.connect(to: Topology.service6, through: bypassing(nil)) == Topology.clientAddress6,
                "IPv6 direct after the neighbour cache was flushed: neighbour discovery is not tunneled")
        #expect(try s.connect(through: bypassing(allowed)) == Topology.clientAddress4, "vpnexec --bypass by a user the policy names")
        let refused = try Command.status(bypassing(other) + ["true"])
        #expect(refused.status == 125 && refused.stderr.contains("may not start commands outside the profiles: the rule at")
                && refused.stderr.contains("allows user \(allowed.name)"), "\(refused.stderr)")
        #expect(try s.daemon.status().systemProfile == "work")
        #expect(try s.daemon.vpnctl(["status"]).stdout.contains("system mode: every process outside the profiles' cgroups and vpn-bypass.slice is in profile work"))
        // `vpnctl explain` of a plain process: system mode's, routed into the tunnel from its
        // addresses (those the service saw above), though its sockets carry no mark.
        let idle = try BackgroundProcess(s.net.client.enter + ["sleep", "30"], cleanup: cleanup)
        let explained = try ControlCoding.decode(Explanation.self, from: Array(try s.daemon.vpnctl(["explain", "--json", String(idle.pid)]).stdout.utf8))
        idle.kill9()
        #expect(explained.placement == Explanation.system && explained.profile == "work" && explained.mark == nil
                && explained.routes.map(\.source) == [s.tunnel.clientAddress4, s.tunnel.clientAddress6] && explained.routes.allSatisfy(\.throughTunnel),
                "\(explained)")

        // The tunnel down: the plain process and its DNS are held, the bypassed one is not.
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "udp port 8080 or udp port 9002", cleanup: cleanup)
        try s.tunnel.setClientLink(up: false)
        let plain = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "8080"], cleanup: cleanup)
        let control = try BackgroundProcess(bypassing(nil) + ["python3", s.probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)
        let viaStub = try Command.status(s.net.client.enter + ["python3", dnsq, "udp", "127.0.0.53", "bank.example"])
        #expect(viaStub.stdout.trimmed == "RCODE 2", "the proxy answers SERVFAIL while its tunnel is down: \(viaStub.stdout)\(viaStub.stderr)")
        let direct = try Command.status(s.net.client.enter + ["python3", dnsq, "udp", "192.0.2.53", "bank.example"])
        #expect(direct.stdout.trimmed == "RCODE 2", "a query to an outside resolver goes to the proxy too: \(direct.stdout)\(direct.stderr)")
        Thread.sleep(forTimeInterval: 1)
        plain.stop()
        control.stop()
        let leaked = try capture.packets("udp port 8080"), leakedDNS = try dns53.packets()
        #expect(leaked.isEmpty, "the plain process's datagrams in the clear: \(leaked.prefix(3))")
        #expect(try capture.count("udp port 9002") > 20, "the bypassed control's datagrams leave")
        #expect(leakedDNS.isEmpty, "port-53 packets on the physical link: \(leakedDNS.prefix(5))")
    }
}
