import Foundation
import NetTestSupport
import Testing

/// A profile whose tunnel is vpnd's own engine (`tunnel.wireguard`), dialing our
/// `vpn-server` in the server namespace.
@Suite(.serialized) struct BuiltInTunnelTests {
    /// Proof 5: members leave through the built-in engine from the tunnel's address; with
    /// the server killed, nothing of theirs leaves in the clear.
    @Test func profileRoutesThroughTheEngineAndTheKillswitchHoldsWhenTheServerDies() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let services = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        let server = try OurTunnel(in: net.server, name: "vx\(net.tag)o", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51950
            Address = 10.79.0.1/24, fd79::1/64
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.79.0.2/32, fd79::2/128
            """)
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let conf = daemon.policyDirectory + "/../work.conf"
        FileManager.default.createFile(atPath: conf, contents: Data("""
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.79.0.2/24, fd79::2/64
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51950
            AllowedIPs = 0.0.0.0/0, ::/0
            """.utf8), attributes: [.posixPermissions: 0o600])
        try daemon.writePolicy("[profile.work]\ntunnel.wireguard = \"\(URL(fileURLWithPath: conf).standardized.path)\"\ntunnel.interface = \"\(interface)\"\n")
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        try daemon.start()

        func connect(_ service: String, member: Bool) throws -> String {
            let prefix = member ? try daemon.vpnexec(profile: "work", []) : net.client.enter
            return try Command.run(prefix + ["python3", probe, "tcp", service, "8080"]).trimmed
        }
        #expect(try connect(Topology.service4, member: true) == "10.79.0.2")
        #expect(try connect(Topology.service6, member: true) == "fd79::2")
        #expect(try connect(Topology.service4, member: false) == Topology.clientAddress4)

        let work = try #require(try daemon.status().profiles.first)
        #expect(work.tunnel.interface == interface && work.tunnel.state == "up")
        let engine = try #require(work.tunnel.wireguard)
        #expect(engine.publicKey == clientPublic)
        #expect(engine.peers.first?.publicKey == serverPublic)
        #expect(engine.peers.first?.endpoint == "\(Topology.serverUplink4):51950")
        #expect(engine.peers.first?.latestHandshake != nil && (engine.peers.first?.rxBytes ?? 0) > 0)
        let text = try daemon.vpnctl(["status"]).stdout
        #expect(text.contains("engine    built-in WireGuard, public key \(clientPublic)"))
        #expect(text.contains("peer      \(serverPublic) at \(Topology.serverUplink4):51950: latest handshake"))
        // The `wg` tool reads the built-in tunnel through vpnd's socket.
        #expect(try Command.run(["wg", "show", interface, "peers"]).contains(serverPublic))

        // Someone deletes the interface: the engine ends with it and vpnd starts it again.
        try net.client.run(["ip", "link", "delete", interface])
        try eventually("vpnd to bring the built-in tunnel back") { (try? connect(Topology.service4, member: true)) == "10.79.0.2" }
        #expect(daemon.process?.output.contains("built-in tunnel \(interface) lost its interface; starting it again") == true)

        // The server dies: the member keeps sending, nothing leaves in the clear.
        // The member's datagrams to the service port, as they would look if they leaked.
        let capture = try LeakWatch(on: net.clientUplink, in: net.client, probe: probe, cleanup: cleanup)
        server.process.kill9()
        let sender = try BackgroundProcess(try daemon.vpnexec(profile: "work", ["python3", probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
        let sentBefore = try daemon.status().profiles[0].sent.packets
        Thread.sleep(forTimeInterval: 2)
        #expect(try daemon.status().profiles[0].sent.packets > sentBefore + 50, "the member kept sending")
        #expect(try connect(Topology.service4, member: false) == Topology.clientAddress4, "non-members unaffected")
        sender.stop()
        let (leaked, control) = try capture.stop()
        #expect(leaked.isEmpty, "member packets left in the clear: \(leaked.prefix(5))")
        #expect(control > 20, "the capture saw the non-member's datagrams")
        #expect(!services.seen().contains("udp \(Topology.clientAddress4)"))
    }

    /// The file is part of the policy: a broken one is refused with its own file:line and
    /// the running tunnel stays; a changed one restarts the tunnel; a profile removed on
    /// reload takes its tunnel down.
    @Test func reloadsValidateRestartAndRemoveTheTunnel() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let (clientKey, _) = try WireGuardGo.keyPair()
        let (_, serverPublic) = try WireGuardGo.keyPair()
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let conf = URL(fileURLWithPath: daemon.policyDirectory + "/../work.conf").standardized.path
        func writeConf(_ text: String, mode: Int = 0o600) {
            try? FileManager.default.removeItem(atPath: conf)
            FileManager.default.createFile(atPath: conf, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        }
        let good = "[Interface]\nPrivateKey = \(clientKey)\nAddress = 10.82.0.2/24\n[Peer]\nPublicKey = \(serverPublic)\nEndpoint = \(Topology.serverUplink4):51990\nAllowedIPs = 0.0.0.0/0\n"
        writeConf(good)
        try daemon.writePolicy("[profile.work]\ntunnel.wireguard = \"\(conf)\"\ntunnel.interface = \"\(interface)\"\n")
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        try daemon.start()
        let port = try #require(try daemon.status().profiles[0].tunnel.wireguard?.listenPort)

        writeConf(good.replacingOccurrences(of: "[Peer]", with: "PostUp = iptables -F\n[Peer]"))
        let refused = try daemon.vpnctl(["reload"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("\(conf):4:1: error: PostUp runs a shell command"), "\(refused.stderr)")
        #expect(try daemon.status().profiles[0].tunnel.wireguard?.listenPort == port, "the running tunnel was kept")
        let checked = try daemon.vpnctl(["check", daemon.policyDirectory + "/10-test.toml"])
        #expect(checked.status != 0 && checked.stderr.contains("\(conf):4:1: error: PostUp runs a shell command"), "\(checked.stderr)")

        writeConf(good, mode: 0o666)
        let writable = try daemon.vpnctl(["reload"])
        #expect(writable.status != 0 && writable.stderr.contains("writable by group or others"), "\(writable.stderr)")
        writeConf(good, mode: 0o644)
        let readable = try daemon.vpnctl(["reload"])
        #expect(readable.status != 0 && readable.stderr.contains("readable by group or others (mode 0644) and holds a private key"), "\(readable.stderr)")
        writeConf(good)
        let real = conf + ".real"
        try FileManager.default.moveItem(atPath: conf, toPath: real)
        cleanup.add("remove \(real)") { try? FileManager.default.removeItem(atPath: real) }
        #expect(symlink(real, conf) == 0)
        let linked = try daemon.vpnctl(["reload"])
        #expect(linked.status != 0 && linked.stderr.contains("\(conf): is a symbolic link"), "\(linked.stderr)")

        // CRLF line ends are accepted, as wg-quick accepts them; a broken CRLF file's error
        // names file:line:column and never shows the key, on the client or in vpnd's log.
        writeConf(good.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(try daemon.vpnctl(["reload"]).status == 0)
        writeConf(good.replacingOccurrences(of: "10.82.0.2/24", with: "10.82.0.300/24").replacingOccurrences(of: "\n", with: "\r\n")
                  + "\(clientKey)\r\n")
        let broken = try daemon.vpnctl(["reload"])
        #expect(broken.status != 0 && broken.stderr.contains("\(conf):3:11: error: Address \"10.82.0.300/24\""), "\(broken.stderr)")
        let keyCore = String(clientKey.prefix(20))
        #expect(!broken.stderr.contains(keyCore) && !broken.stdout.contains(keyCore), "the key is in the error output")
        let log = daemon.process?.output ?? ""
        #expect(log.contains("10.82.0.300/24") && !log.contains(keyCore), "vpnd logged the refusal, without the key")

        writeConf(good.replacingOccurrences(of: "10.82.0.2/24", with: "10.82.0.3/24"))
        #expect(try daemon.vpnctl(["reload"]).status == 0)
        try eventually("the restarted tunnel to carry the new address") {
            try daemon.status().profiles[0].tunnel.addresses.contains("10.82.0.3/24")
        }

        try daemon.writePolicy("")
        #expect(try daemon.vpnctl(["reload"]).status == 0)
        try eventually("the tunnel interface to go with its profile") {
            try net.client.status(["ip", "link", "show", interface]).status != 0
        }
        #expect(!FileManager.default.fileExists(atPath: "/var/run/wireguard/\(interface).sock"))
    }
}
