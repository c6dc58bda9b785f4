import Foundation
import NetTestSupport
import Testing

/// vpn-server as a drop-in for wireguard-go: wg-quick (Debian's script) brings a tunnel up
/// with it, and the engine ends, leaving nothing behind, when its interface is deleted.
@Suite(.serialized) struct WireGuardDropInTests {
    /// `WG_QUICK_USERSPACE_IMPLEMENTATION=vpn-server wg-quick up` against a wireguard-go
    /// server, with a full-tunnel file (AllowedIPs 0.0.0.0/0, ::/0), a privileged
    /// ListenPort and a PersistentKeepalive, which reach the engine only through `wg setconf`
    /// and `wg set` after it went into the background with its privileges dropped. The
    /// keepalive starts the handshake before any traffic, as with wireguard-go. Traffic passes v4
    /// and v6 (the server's services see the tunnel addresses); `wg-quick down` deletes the
    /// interface and the engine exits, leaving no socket, interface or rule.
    @Test func wgQuickUpAndDownWithVpnServer() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let services = try net.startServices()
        let server = try WireGuardGoServer(net, subnet: 91, port: 51911, cleanup: cleanup)
        let serverName = server.name, serverPublic = server.publicKey
        let name = "vx\(net.tag)q"
        let quick = try WgQuick(in: net.client, name: name, config: server.clientConfig(["ListenPort = 853"], allowed: "0.0.0.0/0, ::/0",
                                                                                        peerLines: ["PersistentKeepalive = 25"]),
                                cleanup: cleanup)
        let up = try quick.run("up")
        #expect(up.status == 0, "\(up.stderr)")
        #expect(up.stderr.contains("[#] vpn-server \(name)") && up.stderr.contains("[#] wg setconf \(name)"), "\(up.stderr)")
        let engine = try #require(DetachedEngine.find(interface: name))
        // In the background with only what it needs, yet it took port 853 from wg setconf.
        #expect(EnginePrivileges.of(pid: engine.pid) == EnginePrivileges.expected)
        #expect(try wgInterfaces().contains(name))
        let shown = try Command.run(["wg", "show", name])
        #expect(shown.contains("listening port: 853") && shown.contains("fwmark: 0xca6c") && shown.contains("peer: \(serverPublic)"), "\(shown)")
        #expect(try net.client.run(["ip", "-4", "rule"]).contains("not from all fwmark 0xca6c lookup 51820"))
        // The server saw us come from the port wg-quick asked for, before we sent anything.
        try eventually("a handshake from the keepalive alone") {
            try Command.run(["wg", "show", serverName, "endpoints"]).contains("\(Topology.clientAddress4):853")
        }
        #expect(try Command.run(["wg", "show", serverName, "latest-handshakes"]).split(whereSeparator: \.isWhitespace).last != "0")
        for address in ["10.91.0.1", "fd91::1"] {
            let ping = try net.client.status(["ping", "-c", "3", "-i", "0.2", "-W", "3", address])
            #expect(ping.status == 0, "ping \(address): \(ping.stdout)")
        }
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        #expect(try net.client.run(["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == "10.91.0.2")
        #expect(try net.client.run(["python3", probe, "tcp", Topology.service6, "8080"]).trimmed == "fd91::2")
        #expect(services.seen() == ["tcp 10.91.0.2", "tcp fd91::2"])

        let down = try quick.run("down")
        #expect(down.status == 0, "\(down.stderr)")
        #expect(engine.waitForExit(seconds: 10), "vpn-server \(name) still runs after wg-quick down")
        #expect(!FileManager.default.fileExists(atPath: "/var/run/wireguard/\(name).sock"))
        #expect(try net.client.status(["ip", "link", "show", name]).status != 0)
        #expect(try !wgInterfaces().contains(name))
        #expect(try !net.client.run(["ip", "-4", "rule"]).contains("51820"))
        #expect(try !net.client.run(["ip", "-6", "rule"]).contains("51820"))
        // Back on the client's own address.
        #expect(try net.client.run(["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == Topology.clientAddress4)
    }

    /// `ip link delete` under a running engine, in each way it runs: as wg-quick's (-f),
    /// as a full-tunnel client and as a listening peer with NAT (--config). Each exits 0
    /// within seconds, its socket gone (so `wg show` no longer lists it), and what it set
    /// up beside the interface (rules, nft table) removed.
    @Test func deletingTheInterfaceEndsTheEngineCleanly() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let bare = "vx\(net.tag)f"
        let foreground = try BackgroundProcess(net.client.enter + [try Binaries.path("vpn-server"), "-f", bare], cleanup: cleanup)
        cleanup.add("remove \(bare).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(bare).sock") }
        try eventually("vpn-server -f \(bare) to serve its socket") {
            guard foreground.isRunning else { throw TestEnvironmentError("vpn-server -f exited: \(foreground.output)") }
            return try wgInterfaces().contains(bare)
        }
        let client = try OurClientAndWireGuardGoServer(net, subnet: 94, port: 51912, allowed: "0.0.0.0/0, ::/0", cleanup: cleanup).ours
        let (serverKey, _) = try WireGuardGo.keyPair()
        let (_, peerPublic) = try WireGuardGo.keyPair()
        let server = try OurTunnel(in: net.server, name: "vx\(net.tag)l", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51913
            Address = 10.95.0.1/24
            [Peer]
            PublicKey = \(peerPublic)
            AllowedIPs = 10.95.0.2/32
            """)
        #expect(try net.client.run(["ip", "-4", "rule"]).contains("lookup 51820"))
        #expect(try net.server.status(["nft", "list", "table", "inet", "vpn_server_\(server.name)"]).status == 0)

        for (name, process, namespace) in [(bare, foreground, net.client), (client.name, client.process, net.client),
                                           (server.name, server.process, net.server)] {
            try namespace.run(["ip", "link", "delete", name])
            #expect(process.waitForExit(seconds: 10), "\(name): still running after its interface was deleted")
            #expect(process.process.terminationReason == .exit && process.process.terminationStatus == 0,
                    "\(name): \(process.process.terminationReason) \(process.process.terminationStatus): \(process.output)")
            #expect(process.output.contains("the interface was deleted"), "\(process.output)")
            #expect(!FileManager.default.fileExists(atPath: "/var/run/wireguard/\(name).sock"))
            #expect(try !wgInterfaces().contains(name))
        }
        #expect(try !net.client.run(["ip", "-4", "rule"]).contains("51820"))
        #expect(try !net.client.run(["ip", "-6", "rule"]).contains("51820"))
        #expect(try net.server.status(["nft", "list", "table", "inet", "vpn_server_\(server.name)"]).status != 0)
    }

    /// wg-quick sets the MTU only after the engine started (here `MTU = 8000`, on a 1500
    /// uplink): the engine follows it, so packets up to the new MTU pass whole both ways
    /// (the outer datagrams are fragmented on the way), v4 and v6.
    @Test func theMTUWgQuickSetsIsFollowed() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let server = try WireGuardGoServer(net, subnet: 90, port: 51918, cleanup: cleanup)
        try net.server.run(["ip", "link", "set", server.name, "mtu", "8000"])
        let name = "vx\(net.tag)q"
        let quick = try WgQuick(in: net.client, name: name, config: server.clientConfig(["MTU = 8000"]), cleanup: cleanup)
        let up = try quick.run("up")
        #expect(up.status == 0 && up.stderr.contains("[#] ip link set mtu 8000 up dev \(name)"), "\(up.stderr)")
        for address in ["10.90.0.1", "fd90::1"] {
            // Don't fragment: 7500 bytes of data travel as one packet inside the tunnel.
            let ping = try net.client.status(["ping", "-c", "3", "-i", "0.2", "-W", "3", "-M", "do", "-s", "7500", address])
            #expect(ping.status == 0 && ping.stdout.contains("3 received"), "ping -s 7500 \(address): \(ping.stdout)\(ping.stderr)")
        }
        #expect(try quick.run("down").status == 0)
    }
}
