import Foundation
import NetTestSupport
import Testing

/// A built-in tunnel with several servers (`tunnel.wireguard` as a list, `tunnel.servers`),
/// against `vpn-server`s in the server namespace.
@Suite(.serialized) struct ServerFailoverTests {
    /// One client file per server: the same client key, the server's key and port.
    static func clientFile(key: String, address: String, serverPublic: String, port: Int) -> String {
        "[Interface]\nPrivateKey = \(key)\nAddress = \(address)/24\n[Peer]\nPublicKey = \(serverPublic)\nEndpoint = \(Topology.serverUplink4):\(port)\nAllowedIPs = 0.0.0.0/0\n"
    }

    static func server(_ net: Topology, _ name: String, port: Int, subnet: Int, client: String, cleanup: Cleanup) throws -> (OurTunnel, String) {
        let (key, publicKey) = try WireGuardGo.keyPair()
        let tunnel = try OurTunnel(in: net.server, name: name, cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(key)
            ListenPort = \(port)
            Address = 10.\(subnet).0.1/24
            [Peer]
            PublicKey = \(client)
            AllowedIPs = 10.\(subnet).0.2/32
            """)
        return (tunnel, publicKey)
    }

    static func write(_ daemon: DaemonHarness, _ name: String, _ text: String) -> String {
        let path = URL(fileURLWithPath: daemon.policyDirectory + "/../\(name).conf").standardized.path
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        return path
    }

    /// failover with `failover_after = 2`: the first server is dead (nothing answers on its
    /// port); once two initiations went unanswered (10 s at WireGuard's 5 s: the third
    /// leaves then) the second serves (plus its own handshake and vpnd's one-second look),
    /// and a member sending all along leaks nothing meanwhile.
    @Test func theSecondServerServesWhenTheFirstIsDeadAndNothingGoesDirect() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let services = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        let (_, deadPublic) = try WireGuardGo.keyPair()
        let (_, livePublic) = try Self.server(net, "vx\(net.tag)l", port: 51971, subnet: 66, client: clientPublic, cleanup: cleanup)
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let dead = Self.write(daemon, "dead", Self.clientFile(key: clientKey, address: "10.66.0.2", serverPublic: deadPublic, port: 51970))
        let live = Self.write(daemon, "live", Self.clientFile(key: clientKey, address: "10.66.0.2", serverPublic: livePublic, port: 51971))
        try daemon.writePolicy("[profile.work]\ntunnel = { wireguard = [\"\(dead)\", \"\(live)\"], interface = \"\(interface)\", servers = \"failover\", failover_after = 2 }\n")
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        let capture = try LeakWatch(on: net.clientUplink, in: net.client, probe: probe, cleanup: cleanup)
        try daemon.start()
        let started = Date()
        let sender = try BackgroundProcess(try daemon.vpnexec(profile: "work", ["python3", probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
        let first = try #require(try daemon.status().profiles.first?.tunnel.servers)
        #expect(first.mode == "failover" && first.current == dead && first.state == "trying" && first.files == [dead, live])
        try eventually("the member's datagrams through the second server", seconds: 30) { services.count("udp 10.66.0.2") > 5 }
        let elapsed = Date().timeIntervalSince(started)
        sender.stop()
        let (leaked, control) = try capture.stop()
        #expect(leaked.isEmpty, "member packets left in the clear while the tunnel switched: \(leaked.prefix(5))")
        #expect(control > 20, "the capture saw the non-member's datagrams")
        #expect(elapsed >= 9 && elapsed < 20, "switched after \(elapsed) s: two unanswered initiations take 10 s")
        let servers = try #require(try daemon.status().profiles.first?.tunnel.servers)
        #expect(servers.current == live && servers.state == "up", "\(servers)")
        #expect(servers.reason == "server 1 left 2 initiations unanswered")
        #expect(try Command.run((try daemon.vpnexec(profile: "work", [])) + ["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == "10.66.0.2")
        let text = try daemon.vpnctl(["status"]).stdout
        #expect(text.contains("servers   failover: \(live) (up), 2 of 2: server 1 left 2 initiations unanswered"), "\(text)")
        #expect(daemon.process?.output.contains("server 2 of 2 (\(live)): server 1 left 2 initiations unanswered") == true)
        print("failover: the second server served \(String(format: "%.1f", elapsed)) s after vpnd started")
    }

    /// failover while in use: the first server dies under a sending member; WireGuard starts
    /// a new handshake 15 s after data went unanswered (counted from the last packet the
    /// server sent, which may be up to 10 s before it died: its passive keepalive), and
    /// after 3 (the default) unanswered initiations, 15 s more, the second serves; nothing
    /// went direct.
    @Test func aServerThatDiesInUseGivesWayToTheNext() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let services = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        let (firstServer, firstPublic) = try Self.server(net, "vx\(net.tag)l", port: 51971, subnet: 66, client: clientPublic, cleanup: cleanup)
        let (_, secondPublic) = try Self.server(net, "vx\(net.tag)m", port: 51972, subnet: 69, client: clientPublic, cleanup: cleanup)
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let first = Self.write(daemon, "first", Self.clientFile(key: clientKey, address: "10.66.0.2", serverPublic: firstPublic, port: 51971))
        let second = Self.write(daemon, "second", Self.clientFile(key: clientKey, address: "10.69.0.2", serverPublic: secondPublic, port: 51972))
        try daemon.writePolicy("[profile.work]\ntunnel = { wireguard = [\"\(first)\", \"\(second)\"], interface = \"\(interface)\" }\n")
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        try daemon.start()
        let sender = try BackgroundProcess(try daemon.vpnexec(profile: "work", ["python3", probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
        try eventually("the member's datagrams through the first server", seconds: 20) { services.count("udp 10.66.0.2") > 5 }
        let capture = try LeakWatch(on: net.clientUplink, in: net.client, probe: probe, cleanup: cleanup)
        firstServer.process.kill9()
        let killed = Date()
        try eventually("the member's datagrams through the second server", seconds: 60) { services.count("udp 10.69.0.2") > 5 }
        let elapsed = Date().timeIntervalSince(killed)
        sender.stop()
        let (leaked, control) = try capture.stop()
        #expect(leaked.isEmpty, "member packets left in the clear while the tunnel switched: \(leaked.prefix(5))")
        #expect(control > 20, "the capture saw the non-member's datagrams")
        #expect(elapsed >= 19 && elapsed < 40, "switched \(elapsed) s after the server died: 15 s before a new handshake, then 3 unanswered at 5 s")
        let servers = try #require(try daemon.status().profiles.first?.tunnel.servers)
        #expect(servers.current == second && servers.reason == "server 1 stopped answering (3 initiations unanswered)", "\(servers)")
        print("failover in use: the second server served \(String(format: "%.1f", elapsed)) s after the first died")
    }

    /// fastest: the first server sits behind a relay that holds each datagram 300 ms each
    /// way (the kernel has no netem); the second answers at once and is chosen.
    @Test func fastestPicksTheNearerOfTwo() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let services = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        let (_, farPublic) = try Self.server(net, "vx\(net.tag)f", port: 51974, subnet: 67, client: clientPublic, cleanup: cleanup)
        let (_, nearPublic) = try Self.server(net, "vx\(net.tag)n", port: 51976, subnet: 68, client: clientPublic, cleanup: cleanup)
        let relay = NSTemporaryDirectory() + "vx-\(uniqueTag())-relay.py"
        try Self.delayRelay.write(toFile: relay, atomically: true, encoding: .utf8)
        cleanup.add("remove \(relay)") { try? FileManager.default.removeItem(atPath: relay) }
        let relayProcess = try BackgroundProcess(net.server.enter + ["python3", relay, "51975", "51974", "0.3"], cleanup: cleanup)
        try eventually("the relay to listen") { try net.server.run(["ss", "-lunH"]).contains(":51975") || !relayProcess.isRunning }
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let far = Self.write(daemon, "far", Self.clientFile(key: clientKey, address: "10.67.0.2", serverPublic: farPublic, port: 51975))
        let near = Self.write(daemon, "near", Self.clientFile(key: clientKey, address: "10.68.0.2", serverPublic: nearPublic, port: 51976))
        try daemon.writePolicy("[profile.work]\ntunnel = { wireguard = [\"\(far)\", \"\(near)\"], interface = \"\(interface)\", servers = \"fastest\" }\n")
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        try daemon.start()
        try eventually("the fastest server chosen and up", seconds: 40) {
            let s = try daemon.status().profiles.first?.tunnel.servers
            return s?.state == "up" && s?.reason.hasPrefix("fastest") == true
        }
        let servers = try #require(try daemon.status().profiles.first?.tunnel.servers)
        #expect(servers.current == near, "\(servers)")
        let trips = servers.roundTripsMs
        #expect(trips.count == 2 && (trips[0] ?? 0) >= 590 && (trips[1] ?? 1000) < (trips[0] ?? 0) - 300, "round trips \(trips)")
        #expect(try Command.run((try daemon.vpnexec(profile: "work", [])) + ["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == "10.68.0.2")
        #expect(!services.seen().contains("tcp 10.67.0.2"))
        print("fastest: round trips \(trips.map { $0.map(String.init) ?? "-" }) ms; \(servers.reason)")
    }

    /// fastest, measured again when the host's network changes: both servers behind relays
    /// whose delays the test sets; the near one becomes the far one, the client's physical
    /// interface gets another address, and vpnd moves to the other server.
    @Test func fastestMeasuresAgainWhenTheNetworkChanges() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        _ = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        let (_, aPublic) = try Self.server(net, "vx\(net.tag)f", port: 51974, subnet: 67, client: clientPublic, cleanup: cleanup)
        let (_, bPublic) = try Self.server(net, "vx\(net.tag)n", port: 51976, subnet: 68, client: clientPublic, cleanup: cleanup)
        let relay = NSTemporaryDirectory() + "vx-\(uniqueTag())-relay.py"
        try Self.delayRelay.write(toFile: relay, atomically: true, encoding: .utf8)
        cleanup.add("remove \(relay)") { try? FileManager.default.removeItem(atPath: relay) }
        func delayFile(_ seconds: String) throws -> String {
            let path = NSTemporaryDirectory() + "vx-\(uniqueTag())-delay"
            try seconds.write(toFile: path, atomically: true, encoding: .utf8)
            cleanup.add("remove \(path)") { try? FileManager.default.removeItem(atPath: path) }
            return path
        }
        let aDelay = try delayFile("0.2"), bDelay = try delayFile("0")
        for (listen, target, file) in [("51975", "51974", aDelay), ("51977", "51976", bDelay)] {
            let process = try BackgroundProcess(net.server.enter + ["python3", relay, listen, target, file], cleanup: cleanup)
            try eventually("the relay to listen") { try net.server.run(["ss", "-lunH"]).contains(":\(listen)") || !process.isRunning }
        }
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let a = Self.write(daemon, "a", Self.clientFile(key: clientKey, address: "10.67.0.2", serverPublic: aPublic, port: 51975))
        let b = Self.write(daemon, "b", Self.clientFile(key: clientKey, address: "10.68.0.2", serverPublic: bPublic, port: 51977))
        try daemon.writePolicy("[profile.work]\ntunnel = { wireguard = [\"\(a)\", \"\(b)\"], interface = \"\(interface)\", servers = \"fastest\" }\n")
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        try daemon.start()
        func chosen() throws -> String? {
            let s = try daemon.status().profiles.first?.tunnel.servers
            return s?.state == "up" && s?.reason.hasPrefix("fastest") == true ? s?.current : nil
        }
        try eventually("the fastest server chosen", seconds: 40) { try chosen() == b }
        try "0.3".write(toFile: bDelay, atomically: true, encoding: .utf8)
        try "0".write(toFile: aDelay, atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 3)
        #expect(try chosen() == b, "no network change, no new measurement")
        try net.client.run(["ip", "addr", "add", "198.51.100.3/24", "dev", net.clientUplink])
        try eventually("the other server chosen after the network changed", seconds: 40) { try chosen() == a }
        #expect(try Command.run((try daemon.vpnexec(profile: "work", [])) + ["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == "10.67.0.2")
        #expect(daemon.process?.output.contains("network changed: measuring the handshake round trip of each server") == true)
    }

    /// A UDP relay that holds every datagram DELAY seconds in each direction (one client);
    /// DELAY is a number or a file holding one, read for every datagram.
    static let delayRelay = """
        import os, socket, sys, threading
        listen, target, delay_arg = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
        def delay():
            return float(open(delay_arg).read()) if os.path.exists(delay_arg) else float(delay_arg)
        front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); front.bind(("0.0.0.0", listen))
        back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); back.bind(("127.0.0.1", 0))
        client = [None]
        def later(sock, data, addr):
            t = threading.Timer(delay(), lambda: sock.sendto(data, addr)); t.daemon = True; t.start()
        def answers():
            while True:
                data, _ = back.recvfrom(65535)
                if client[0]: later(front, data, client[0])
        threading.Thread(target=answers, daemon=True).start()
        while True:
            data, addr = front.recvfrom(65535)
            client[0] = addr
            later(back, data, ("127.0.0.1", target))
        """
}
