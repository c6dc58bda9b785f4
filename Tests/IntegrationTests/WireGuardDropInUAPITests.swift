import Foundation
import NetTestSupport
import Testing

/// The `wg` socket of a running vpn-server as wireguard-go's: refusals answer with the same
/// negative errno (so `wg` prints the same words) and are logged with their reason, and
/// `listen-port` moves a running engine's socket.
@Suite(.serialized) struct WireGuardDropInUAPITests {
    /// One raw request on a `wg` socket, and the answer up to its blank line.
    static func ask(_ socket: String, _ request: String, cleanup: Cleanup) throws -> String {
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
            s.sendall(sys.argv[2].encode())
            answer = b""
            while not answer.endswith(b"\\n\\n"):
                chunk = s.recv(4096)
                if not chunk: break
                answer += chunk
            sys.stdout.write(answer.decode())
            """
        return try Command.run(["python3", "-c", script, socket, request])
    }

    /// The same bad requests to our engine and to wireguard-go get the same answers, and
    /// `wg set ... listen-port` with a taken port fails in the same words; nothing changes,
    /// and our log says why (without the key that the request carried).
    @Test func refusalsAnswerAsWireguardGoDoesAndAreLogged() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let ours = "vx\(net.tag)e", theirs = "vx\(net.tag)r"
        let engine = try BackgroundProcess(net.client.enter + [try Binaries.path("vpn-server"), "-f", ours], cleanup: cleanup)
        cleanup.add("remove \(ours).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(ours).sock") }
        _ = try WireGuardGo.start(in: net.client, theirs, cleanup: cleanup)
        try eventually("vpn-server -f to serve its socket") { try wgInterfaces().contains(ours) || !engine.isRunning }
        let (key, _) = try WireGuardGo.keyPair()
        let keyHex = Data(base64Encoded: key)!.map { String(format: "%02x", $0) }.joined()
        for name in [ours, theirs] {
            try Command.run(["wg", "set", name, "listen-port", "40101"].map { $0 == "40101" && name == theirs ? "40102" : $0 })
        }
        let requests = [
            "set=1\nbogus_key=1\n\n",                        // an unknown key: EINVAL
            "set=1\nlisten_port=70000\n\n",                  // not a port: EINVAL
            "set=1\nno equals sign\n\n",                     // not key=value: EPROTO
            "set=1\n\(keyHex)=1\n\n",                        // a key where a key's name goes
            "set=1\npublic_key=\(String(repeating: "ab", count: 32))\nallowed_ip=-nonsense\n\n",
        ]
        for request in requests {
            let mine = try Self.ask("/var/run/wireguard/\(ours).sock", request, cleanup: cleanup)
            let reference = try Self.ask("/var/run/wireguard/\(theirs).sock", request, cleanup: cleanup)
            #expect(mine == reference, "\(request.debugDescription): ours \(mine.debugDescription), wireguard-go \(reference.debugDescription)")
            #expect(mine.hasPrefix("errno=-"), "\(mine.debugDescription)")
        }
        #expect(try Self.ask("/var/run/wireguard/\(ours).sock", "set=1\nbogus_key=1\n\n", cleanup: cleanup) == "errno=-22\n\n")
        #expect(try Self.ask("/var/run/wireguard/\(ours).sock", "set=1\nno equals sign\n\n", cleanup: cleanup) == "errno=-71\n\n")

        // A port someone else holds, through `wg` itself.
        let holder = try BackgroundProcess(net.client.enter + ["python3", "-c",
            "import socket, time; s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(('::', 40199)); print('bound', flush=True); time.sleep(120)"],
            cleanup: cleanup)
        try eventually("a socket on port 40199") { holder.output.contains("bound") }
        for name in [ours, theirs] {
            let refused = try Command.status(["wg", "set", name, "listen-port", "40199"])
            #expect(refused.status != 0 && refused.stderr.contains("Address already in use"), "\(name): \(refused.stderr)")
        }
        // Ours changed nothing (wireguard-go reports the port it failed to take).
        let kept = try Command.run(["wg", "show", ours, "listen-port"]).trimmed
        let reference = try Command.run(["wg", "show", theirs, "listen-port"]).trimmed
        #expect(kept == "40101", "wg show \(ours) listen-port: \(kept); wireguard-go: \(reference)")
        let log = engine.output
        #expect(log.contains("refused a `wg` request (Invalid argument): unknown interface key \"bogus_key\""), "\(log)")
        #expect(log.contains("refused a `wg` request (Protocol error)"), "\(log)")
        #expect(log.contains("refused a `wg` request (Address already in use): cannot move to UDP port 40199"), "\(log)")
        #expect(!log.contains(keyHex.prefix(20)), "the log shows the key sent as a key name")
    }

    /// `wg set IFACE listen-port N` on our client while TCP runs through it both ways, v4
    /// and v6: the socket moves, the wireguard-go server follows the new source port (it
    /// roams to it on the next authenticated packet), the old port is closed, and every
    /// byte arrives (checked by SHA-256).
    @Test func listenPortMovesUnderTraffic() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let pair = try OurClientAndWireGuardGoServer(net, subnet: 96, port: 51914, cleanup: cleanup)
        let ours = pair.ours
        let serverName = "vx\(net.tag)g"
        let bulk = try PythonScript.write(PythonScript.bulk, cleanup: cleanup)
        try net.client.run(["ping", "-c", "1", "-W", "3", "10.96.0.1"])
        let before = try #require(UInt16(Command.run(["wg", "show", ours.name, "listen-port"]).trimmed))
        for address in ["10.96.0.1", "fd96::1"] {
            let server = try BackgroundProcess(net.server.enter + ["python3", bulk, "serve", address, "8094"], cleanup: cleanup)
            try eventually("the bulk server on \(address)") { server.output.contains("listening") }
        }
        let size = "\(64 << 20)"
        let transfers = try [("up", "10.96.0.1"), ("down", "fd96::1")].map { direction, address in
            (direction, address, try BackgroundProcess(net.client.enter + ["python3", bulk, direction, address, "8094", size], cleanup: cleanup))
        }
        // Once bytes flow, move.
        try eventually("traffic through the tunnel") {
            let transfer = try Command.run(["wg", "show", ours.name, "transfer"])
            return transfer.split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }.contains { $0 > 4 << 20 }
        }
        let after: UInt16 = before == 40123 ? 40124 : 40123
        try Command.run(["wg", "set", ours.name, "listen-port", "\(after)"])
        // The move happened under traffic, not after it.
        #expect(transfers.allSatisfy { $0.2.isRunning }, "a transfer ended before the move")
        #expect(try Command.run(["wg", "show", ours.name, "listen-port"]).trimmed == "\(after)")
        for (direction, address, process) in transfers {
            #expect(process.waitForExit(seconds: 120), "\(direction) \(address) did not finish")
            #expect(process.output.trimmed == "ok", "\(direction) \(address): \(process.output)")
        }
        #expect(try Command.run(["wg", "show", serverName, "endpoints"]).contains("\(Topology.clientAddress4):\(after)"))
        let listening = try net.client.run(["ss", "-Hulnp"])
        #expect(listening.contains(":\(after) ") && !listening.contains(":\(before) "), "\(listening)")
        #expect(ours.process.output.contains("UDP port \(before) -> \(after)"), "\(ours.process.output)")
    }

    /// `wg set ... persistent-keepalive 25` on an engine whose interface is down and has no
    /// address (so the kernel sends nothing into it): the keepalive alone brings the
    /// handshake, as wireguard-go's does, and the server learns where we are.
    @Test func switchingPersistentKeepaliveOnStartsTheHandshake() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let server = try WireGuardGoServer(net, subnet: 89, port: 51919, cleanup: cleanup)
        let name = "vx\(net.tag)k"
        let engine = try BackgroundProcess(net.client.enter + [try Binaries.path("vpn-server"), "-f", name], cleanup: cleanup)
        cleanup.add("remove \(name).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(name).sock") }
        try eventually("vpn-server -f to serve its socket") { try wgInterfaces().contains(name) || !engine.isRunning }
        let keyFile = NSTemporaryDirectory() + "vx-\(uniqueTag()).key"
        try server.clientKey.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        try Command.run(["wg", "set", name, "private-key", keyFile, "listen-port", "40188", "peer", server.publicKey,
                         "endpoint", "\(Topology.serverUplink4):51919", "allowed-ips", "10.89.0.0/24"])
        Thread.sleep(forTimeInterval: 1)
        #expect(try Command.run(["wg", "show", server.name, "latest-handshakes"]).split(whereSeparator: \.isWhitespace).last == "0",
                "a handshake before the keepalive was switched on")
        try Command.run(["wg", "set", name, "peer", server.publicKey, "persistent-keepalive", "25"])
        try eventually("the handshake the keepalive starts") {
            try Command.run(["wg", "show", server.name, "endpoints"]).contains("\(Topology.clientAddress4):40188")
        }
        #expect(try net.client.run(["ip", "-br", "link", "show", name]).contains("DOWN"))
    }
}
