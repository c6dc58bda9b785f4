import Foundation
import NetTestSupport
import Testing

/// `vpnctl plan --policy-dir` reads its facts with vpnd's reader: the plan it shows is the
/// plan vpnd applies, but for what only a running vpnd knows, which its header names.
@Suite(.serialized) struct SharedPlanTests {
    @Test func thePlanShownKeepsBuiltInTunnelsNetworksAsTheAppliedOne() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let (clientKey, _) = try WireGuardGo.keyPair()
        let (_, serverPublic) = try WireGuardGo.keyPair()
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let conf = URL(fileURLWithPath: daemon.policyDirectory + "/../work.conf").standardized.path
        FileManager.default.createFile(atPath: conf, contents: Data("""
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.79.0.2/24, fd79::2/64
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51950
            AllowedIPs = 0.0.0.0/0, ::/0
            """.utf8), attributes: [.posixPermissions: 0o600])
        try daemon.writePolicy("[profile.work]\ntunnel.wireguard = \"\(conf)\"\ntunnel.interface = \"\(interface)\"\nallow_lan = true\n")
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        func networkLines(_ plan: String) -> [Substring] {
            plan.split(separator: "\n").filter { !$0.hasPrefix("#") && ($0.contains("10.79.0.0/24") || $0.contains("fd79::/64")) }
        }

        // No vpnd, no interface: the networks come from the tunnel's file.
        let offline = try daemon.vpnctl(["plan", "--policy-dir", daemon.policyDirectory, "--cgroup-parent", daemon.cgroupParent])
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(offline.stdout.contains("# read by vpnctl, not vpnd: the transport of \(interface) is vpnd's own socket, known to vpnd only"))
        let fromFile = networkLines(offline.stdout)
        #expect(fromFile.contains { $0.contains("10.79.0.0/24") } && fromFile.contains { $0.contains("fd79::/64") }, "\(offline.stdout)")

        // The positive control: vpnd's own plan has the same lines.
        try daemon.start()
        let online = try daemon.vpnctl(["plan"])
        #expect(online.status == 0, "\(online.stderr)")
        #expect(networkLines(online.stdout) == fromFile)
        // Routes and addresses name their interfaces (the steering routes' loopback too), both
        // ways: no `dev #1` that `ip` would not take.
        for plan in [offline.stdout, online.stdout] {
            #expect(!plan.contains("dev #") && plan.contains(" dev lo "), "\(plan)")
        }

        // A built-in tunnel added on disk, not yet reloaded: vpnd's `vpnctl plan` is what the
        // reload will apply, its networks from its file included.
        let home = "vx\(net.tag)c"
        let homeConf = URL(fileURLWithPath: daemon.policyDirectory + "/../home.conf").standardized.path
        FileManager.default.createFile(atPath: homeConf, contents: Data("""
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.78.0.2/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51951
            AllowedIPs = 0.0.0.0/0
            """.utf8), attributes: [.posixPermissions: 0o600])
        cleanup.add("remove \(home).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(home).sock") }
        try daemon.writePolicy("[profile.home]\ntunnel.wireguard = \"\(homeConf)\"\ntunnel.interface = \"\(home)\"\nallow_lan = true\n", file: "20-home.toml")
        func homeLines(_ plan: String) -> [Substring] { plan.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("10.78.0.0/24") } }
        let shown = try daemon.vpnctl(["plan"])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(!homeLines(shown.stdout).isEmpty, "\(shown.stdout)")
        let reload = try daemon.vpnctl(["reload"])
        #expect(reload.status == 0, "\(reload.stderr)")
        #expect(homeLines(try daemon.vpnctl(["plan"]).stdout) == homeLines(shown.stdout))
    }
}
