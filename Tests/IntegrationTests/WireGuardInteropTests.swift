import Foundation
import NetTestSupport
import Testing

/// Our engine (`vpn-server`) against wireguard-go, the reference implementation, in both
/// roles, in namespaces: what each side's services see proves the tunnel carried it.
@Suite(.serialized) struct WireGuardInteropTests {
    /// Our client dials a wireguard-go server: ping and TCP both ways, IPv4 and IPv6.
    @Test func ourClientWithWireguardGoServer() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let topology = try Topology(cleanup: cleanup)
        let pair = try OurClientAndWireGuardGoServer(topology, subnet: 77, port: 51900, cleanup: cleanup)
        let ours = pair.ours, serverPublic = pair.serverPublic, clientPublic = pair.clientPublic
        try expectTunnelCarries(near: topology.client, nearAddresses: ("10.77.0.2", "fd77::2"),
                                far: topology.server, farAddresses: ("10.77.0.1", "fd77::1"), cleanup: cleanup)
        // `wg show` reads our userspace API socket as it reads wireguard-go's.
        let shown = try Command.run(["wg", "show", ours.name])
        #expect(shown.contains("peer: \(serverPublic)"))
        #expect(shown.contains("endpoint: \(Topology.serverUplink4):51900"))
        #expect(shown.contains("latest handshake:"))
        #expect(shown.contains("transfer:"))
        #expect(try Command.run(["wg", "show", ours.name, "public-key"]).contains(clientPublic))
        // `wg set` changes the running engine: keepalive and AllowedIPs of a peer, a new peer, its removal.
        let (_, extraPublic) = try WireGuardGo.keyPair()
        try Command.run(["wg", "set", ours.name, "peer", serverPublic, "persistent-keepalive", "25", "allowed-ips", "10.77.0.0/24,fd77::/64,192.0.2.0/24"])
        try Command.run(["wg", "set", ours.name, "peer", extraPublic, "allowed-ips", "198.51.100.77/32", "endpoint", "192.0.2.9:1234"])
        #expect(try Command.run(["wg", "show", ours.name, "persistent-keepalive"]).contains("\(serverPublic)\t25"))
        let allowed = try Command.run(["wg", "show", ours.name, "allowed-ips"])
        #expect(allowed.contains("\(serverPublic)\t10.77.0.0/24 192.0.2.0/24 fd77::/64") && allowed.contains("\(extraPublic)\t198.51.100.77/32"), "\(allowed)")
        try Command.run(["wg", "set", ours.name, "peer", extraPublic, "remove"])
        #expect(try Command.run(["wg", "show", ours.name, "peers"]).trimmed == serverPublic)
        try topology.client.run(["ping", "-c", "1", "-W", "3", "10.77.0.1"])
    }

    /// A provider's usual file: AllowedIPs = 0.0.0.0/0, ::/0. Everything leaves through the
    /// tunnel (the service sees the tunnel address), the encrypted datagrams keep the uplink,
    /// and the routing rules go when vpn-server stops.
    @Test func ourClientAsAFullTunnel() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let topology = try Topology(cleanup: cleanup)
        let services = try topology.startServices()
        let ours = try OurClientAndWireGuardGoServer(topology, subnet: 83, port: 51902, allowed: "0.0.0.0/0, ::/0", cleanup: cleanup).ours
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        #expect(try topology.client.run(["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == "10.83.0.2")
        #expect(try topology.client.run(["python3", probe, "tcp", Topology.service6, "8080"]).trimmed == "fd83::2")
        #expect(services.seen() == ["tcp 10.83.0.2", "tcp fd83::2"])
        let rules = try topology.client.run(["ip", "-4", "rule"])
        #expect(rules.contains("not from all fwmark 0xca6c lookup 51820") && rules.contains("lookup main suppress_prefixlength 0"), "\(rules)")
        ours.process.stop()
        #expect(ours.process.waitForExit(seconds: 10))
        #expect(try !topology.client.run(["ip", "-4", "rule"]).contains("51820"))
        #expect(try !topology.client.run(["ip", "-6", "rule"]).contains("51820"))
        // Without the tunnel, the client is back on its own address.
        #expect(try topology.client.run(["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == Topology.clientAddress4)
    }

    /// Bulk TCP both ways between our client and a wireguard-go server, IPv4 and IPv6: the
    /// TCP and UDP super-packets our TUN hands us (TSO, USO) are cut into segments the
    /// peer's kernel accepts, and the TCP segments we receive reach our kernel coalesced
    /// (GRO); every byte arrives intact and nothing is refused or dropped.
    @Test func bulkTransfersAreSegmentedAndCoalescedIntact() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let topology = try Topology(cleanup: cleanup)
        let ours = try OurClientAndWireGuardGoServer(topology, subnet: 84, port: 51903, cleanup: cleanup).ours
        let bulk = try PythonScript.write(PythonScript.bulk, cleanup: cleanup)
        let attack = try PythonScript.write(PythonScript.wireGuardAttack, cleanup: cleanup)
        for address in ["10.84.0.1", "fd84::1"] {
            let server = try BackgroundProcess(topology.server.enter + ["python3", bulk, "serve", address, "8093"], cleanup: cleanup)
            try eventually("the bulk server on \(address)") { server.output.contains("listening") }
        }
        let size = "\(24 << 20)"
        for address in ["10.84.0.1", "fd84::1"] {
            for direction in ["up", "down"] {
                let result = try topology.client.run(["python3", bulk, direction, address, "8093", size]).trimmed
                #expect(result == "ok", "\(direction) \(address): \(result)")
            }
        }
        // More bytes per packet than the MTU on our TUN: the kernel sent and took super-packets.
        func counters() throws -> [String: [String: Any]] {
            let json = try topology.client.run(["ip", "-j", "-s", "link", "show", "dev", ours.name])
            let link = try #require((try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])?.first)
            return try #require(link["stats64"] as? [String: [String: Any]])
        }
        let stats = try counters()
        func perPacket(_ side: String) -> Int {
            let bytes = (stats[side]?["bytes"] as? Int) ?? 0, packets = (stats[side]?["packets"] as? Int) ?? 0
            return packets == 0 ? 0 : bytes / packets
        }
        #expect(perPacket("tx") > 1420, "bytes per packet the kernel handed us: \(perPacket("tx"))")
        #expect(perPacket("rx") > 1420, "bytes per packet we handed the kernel: \(perPacket("rx"))")

        // UDP_SEGMENT sends (as QUIC makes them): the kernel hands us 8 datagrams in one
        // read (TUN_F_USO) and each arrives whole and checked.
        for (address, port) in [("10.84.0.1", "8094"), ("fd84::1", "8095")] {
            let receiver = try BackgroundProcess(topology.server.enter + ["python3", bulk, "udpserve", address, port], cleanup: cleanup)
            try eventually("the UDP receiver on \(address)") { receiver.output.contains("listening") }
            let before = (try counters()["tx"]?["packets"] as? Int) ?? 0
            try topology.client.run(["python3", bulk, "udpsend", address, port, "50"])
            #expect(receiver.waitForExit(seconds: 10), "the receiver saw no end: \(receiver.output)")
            let reads = ((try counters()["tx"]?["packets"] as? Int) ?? 0) - before
            let counts = receiver.output.split(separator: "\n").last.map { $0.split(separator: " ") } ?? []
            #expect(counts.count == 4 && Int(counts[1]) ?? 0 >= 200 && counts[3] == "0", "\(address): \(receiver.output)")
            #expect(reads < 200, "\(address): \(reads) reads for 400 datagrams sent in runs of 8")
        }
        let drops = try ours.drops(using: attack)
        #expect(drops["tunRefused"] == 0 && drops["malformed"] == 0, "\(drops)")
    }

    /// A wireguard-go client dials our listening `vpn-server`, which masquerades what it
    /// forwards: a host beyond the server sees the server's uplink address.
    @Test func wireguardGoClientWithOurServer() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let topology = try Topology(cleanup: cleanup)
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        _ = try OurTunnel(in: topology.server, name: "vx\(topology.tag)o", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51901
            Address = 10.78.0.1/24, fd78::1/64

            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.78.0.2/32, fd78::2/128
            """)
        let clientName = "vx\(topology.tag)g"
        _ = try WireGuardGo.start(in: topology.client, clientName, cleanup: cleanup)
        let beyond = "192.0.2.99"
        try WireGuardGo.configure(clientName, in: topology.client, key: clientKey, listenPort: nil, peer: serverPublic,
                                  endpoint: "\(Topology.serverUplink4):51901", allowed: "10.78.0.0/24,fd78::/64,\(beyond)/32",
                                  addresses: ["10.78.0.2/24", "fd78::2/64"])
        try topology.client.run(["ip", "route", "add", "\(beyond)/32", "dev", clientName])
        try expectTunnelCarries(near: topology.client, nearAddresses: ("10.78.0.2", "fd78::2"),
                                far: topology.server, farAddresses: ("10.78.0.1", "fd78::1"), cleanup: cleanup)
        // Beyond the server (on the wan router): NAT to the server's uplink.
        try topology.wan.run(["ip", "addr", "add", "\(beyond)/32", "dev", "lo"])
        let services = try Services(in: topology.wan, addresses: [beyond], port: 8090, cleanup: cleanup)
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        #expect(try topology.client.run(["python3", probe, "tcp", beyond, "8090"]).trimmed == Topology.serverUplink4)
        #expect(services.seen() == ["tcp \(Topology.serverUplink4)"])
    }

    /// Ping both ways, then TCP both ways: each side's service reports the other's tunnel address.
    private func expectTunnelCarries(near: NetworkNamespace, nearAddresses: (String, String),
                                     far: NetworkNamespace, farAddresses: (String, String), cleanup: Cleanup) throws {
        for (from, to) in [(near, farAddresses.0), (near, farAddresses.1), (far, nearAddresses.0), (far, nearAddresses.1)] {
            let result = try from.status(["ping", "-c", "3", "-i", "0.2", "-W", "3", to])
            #expect(result.status == 0, "ping \(to) failed: \(result.stdout)\(result.stderr)")
        }
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let farServices = try Services(in: far, addresses: [farAddresses.0, farAddresses.1], port: 8091, cleanup: cleanup)
        let nearServices = try Services(in: near, addresses: [nearAddresses.0, nearAddresses.1], port: 8092, cleanup: cleanup)
        #expect(try near.run(["python3", probe, "tcp", farAddresses.0, "8091"]).trimmed == nearAddresses.0)
        #expect(try near.run(["python3", probe, "tcp", farAddresses.1, "8091"]).trimmed == nearAddresses.1)
        #expect(try far.run(["python3", probe, "tcp", nearAddresses.0, "8092"]).trimmed == farAddresses.0)
        #expect(try far.run(["python3", probe, "tcp", nearAddresses.1, "8092"]).trimmed == farAddresses.1)
        #expect(farServices.seen() == ["tcp \(nearAddresses.0)", "tcp \(nearAddresses.1)"])
        #expect(nearServices.seen() == ["tcp \(farAddresses.0)", "tcp \(farAddresses.1)"])
    }
}

/// A wireguard-go server in `topology.server` (tunnel addresses 10.N.0.1 and fdN::1) and our
/// client in `topology.client` (10.N.0.2, fdN::2) dialing it on `port`.
struct OurClientAndWireGuardGoServer {
    let ours: OurTunnel
    let serverPublic: String
    let clientPublic: String

    init(_ topology: Topology, subnet: Int, port: Int, allowed: String? = nil, cleanup: Cleanup) throws {
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        self.serverPublic = serverPublic
        self.clientPublic = clientPublic
        let serverName = "vx\(topology.tag)g"
        _ = try WireGuardGo.start(in: topology.server, serverName, cleanup: cleanup)
        try WireGuardGo.configure(serverName, in: topology.server, key: serverKey, listenPort: port, peer: clientPublic, endpoint: nil,
                                  allowed: "10.\(subnet).0.2/32,fd\(subnet)::2/128", addresses: ["10.\(subnet).0.1/24", "fd\(subnet)::1/64"])
        ours = try OurTunnel(in: topology.client, name: "vx\(topology.tag)o", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.\(subnet).0.2/24, fd\(subnet)::2/64
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):\(port)
            AllowedIPs = \(allowed ?? "10.\(subnet).0.0/24, fd\(subnet)::/64")
            """)
    }
}

/// `vpn-server` running a wg-quick style file in a namespace, stopped by cleanup.
final class OurTunnel: @unchecked Sendable {
    let name: String
    let process: BackgroundProcess
    let configPath: String

    init(in namespace: NetworkNamespace, name: String, cleanup: Cleanup, config: String, arguments: [String] = []) throws {
        self.name = name
        configPath = NSTemporaryDirectory() + "vx-\(uniqueTag())-\(name).conf"
        FileManager.default.createFile(atPath: configPath, contents: Data(config.utf8), attributes: [.posixPermissions: 0o600])
        cleanup.add("remove \(configPath)") { [configPath] in try? FileManager.default.removeItem(atPath: configPath) }
        process = try BackgroundProcess(namespace.enter + [try Binaries.path("vpn-server"), "--config", configPath, "--interface", name] + arguments,
                                        cleanup: cleanup)
        let socket = "/var/run/wireguard/\(name).sock"
        cleanup.add("remove \(socket)") { try? FileManager.default.removeItem(atPath: socket) }
        let process = self.process
        try eventually("vpn-server to bring \(name) up") {
            guard process.isRunning else { throw TestEnvironmentError("vpn-server exited: \(process.output)") }
            return try FileManager.default.fileExists(atPath: socket)
                && (try namespace.run(["ip", "-br", "link", "show", name])).contains("UP")
        }
    }

    /// The engine's drop counters by reason, from the `get=stats` extension of its userspace
    /// API (`script` is scripts/lib/wgattack.py, which speaks it).
    func drops(using script: String) throws -> [String: UInt64] {
        let text = try Command.run(["python3", script, "stats", "/var/run/wireguard/\(name).sock"])
        var counters: [String: UInt64] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("drop_") {
            let parts = line.dropFirst(5).split(separator: "=")
            if parts.count == 2 { counters[String(parts[0])] = UInt64(parts[1]) }
        }
        return counters
    }
}
