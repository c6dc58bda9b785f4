import Foundation
import NetTestSupport
import Testing

/// A built-in tunnel whose one file lists several `Endpoint`s for its [Peer] (one key,
/// several addresses), against a `vpn-server` in the server namespace.
@Suite(.serialized) struct ServerEndpointsTests {
    /// failover with `failover_after = 2` across the endpoints of one file: the first is dead
    /// (nothing answers on its port), the second is the live server. Once two initiations went
    /// unanswered (10 s at WireGuard's 5 s; the third has just left to the first endpoint)
    /// vpnd sets the second endpoint on the running engine (no new tunnel: the UDP port
    /// stays); its handshake leaves when the engine's floor allows (5 s after the third: one
    /// key), so about 15 s, and the member's datagrams arrive through it; nothing in the
    /// clear meanwhile.
    @Test func theSecondEndpointServesWhenTheFirstIsDeadAndNothingGoesDirect() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scene = try ServerScene(cleanup: cleanup)
        let (net, services, probe, interface, daemon) = (scene.net, scene.services, scene.probe, scene.interface, scene.daemon)
        let (_, serverPublic) = try scene.server("l", port: 51981, subnet: 66)
        let conf = scene.write("endpoints", """
            [Interface]
            PrivateKey = \(scene.clientKey)
            Address = 10.66.0.2/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51980
            Endpoint = \(Topology.serverUplink4):51981
            AllowedIPs = 0.0.0.0/0
            """)
        try scene.policy(tunnel: "wireguard = \"\(conf)\", failover_after = 2")
        let dead = "\(conf) (Endpoint \(Topology.serverUplink4):51980)", live = "\(conf) (Endpoint \(Topology.serverUplink4):51981)"
        let capture = try LeakWatch(on: net.clientUplink, in: net.client, probe: probe, cleanup: cleanup)
        try daemon.start()
        let started = Date()
        let sender = try scene.sendingMember()
        let first = try #require(try daemon.status().profiles.first?.tunnel)
        #expect(first.servers?.mode == "failover" && first.servers?.current == dead && first.servers?.state == "trying" && first.servers?.files == [dead, live],
                "\(String(describing: first.servers))")
        let port = try #require(first.transport?.udpPort)
        try eventually("the member's datagrams through the second endpoint", seconds: 30) { services.count("udp 10.66.0.2") > 5 }
        let elapsed = Date().timeIntervalSince(started)
        sender.stop()
        let (leaked, control) = try capture.stop()
        #expect(leaked.isEmpty, "member packets left in the clear while the tunnel switched: \(leaked.prefix(5))")
        #expect(control > 20, "the capture saw the non-member's datagrams")
        #expect(elapsed >= 14 && elapsed < 22, "switched after \(elapsed) s: two unanswered initiations take 10 s, then the floor of 5 s")
        let tunnel = try #require(try daemon.status().profiles.first?.tunnel)
        #expect(tunnel.servers?.current == live && tunnel.servers?.state == "up", "\(String(describing: tunnel.servers))")
        #expect(tunnel.servers?.reason == "server 1 left 2 initiations unanswered")
        #expect(tunnel.transport?.udpPort == port, "the same engine and socket: the endpoint was set, no new tunnel")
        #expect(tunnel.wireguard?.peers.first?.endpoint == "\(Topology.serverUplink4):51981")
        #expect(try scene.memberSees() == "10.66.0.2")
        let output = daemon.process?.output ?? ""
        #expect(output.contains("server 2 of 2 (\(live)): server 1 left 2 initiations unanswered"), "\(output.suffix(2000))")
        #expect(!output.contains("built-in tunnel \(interface) stopped"), "no restart")
        print("endpoints: the second endpoint served \(String(format: "%.1f", elapsed)) s after vpnd started, on UDP port \(port) throughout")
    }

    /// fastest across the endpoints of one server: the first reaches it through a relay that
    /// holds each datagram 300 ms each way, the second directly. The second's handshake waits
    /// for the engine's floor (5 s after the first's initiation: one key), and that wait is not
    /// counted as its round trip: the direct endpoint is chosen.
    @Test func fastestPicksTheNearerEndpointOfOneServer() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scene = try ServerScene(cleanup: cleanup)
        let (services, daemon) = (scene.services, scene.daemon)
        let (_, serverPublic) = try scene.server("n", port: 51986, subnet: 68)
        try scene.relay(listen: 51985, target: 51986, delay: "0.3")
        let conf = scene.write("endpoints", """
            [Interface]
            PrivateKey = \(scene.clientKey)
            Address = 10.68.0.2/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51985, \(Topology.serverUplink4):51986
            AllowedIPs = 0.0.0.0/0
            """)
        try scene.policy(tunnel: "wireguard = \"\(conf)\", servers = \"fastest\"")
        try daemon.start()
        try eventually("the fastest endpoint chosen and up", seconds: 40) {
            let s = try daemon.status().profiles.first?.tunnel.servers
            return s?.state == "up" && s?.reason.hasPrefix("fastest") == true
        }
        let servers = try #require(try daemon.status().profiles.first?.tunnel.servers)
        #expect(servers.current == "\(conf) (Endpoint \(Topology.serverUplink4):51986)", "\(servers)")
        let trips = servers.roundTripsMs
        #expect(trips.count == 2 && (trips[0] ?? 0) >= 590 && (trips[1] ?? 1000) < (trips[0] ?? 0) - 300, "round trips \(trips)")
        #expect(try scene.memberSees() == "10.68.0.2")
        #expect(services.seen().contains("tcp 10.68.0.2"))
        print("fastest across endpoints: round trips \(trips.map { $0.map(String.init) ?? "-" }) ms; \(servers.reason)")
    }

    /// The errors, each at its place: several Endpoints in a file with two peers (the second
    /// Endpoint's line of the file), `tunnel.servers` with one file whose peer has one
    /// Endpoint (the policy's key).
    @Test func endpointErrorsNameTheirPlace() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let (clientKey, _) = try WireGuardGo.keyPair()
        let (_, aPublic) = try WireGuardGo.keyPair()
        let (_, bPublic) = try WireGuardGo.keyPair()
        let two = ServerScene.write(daemon, "two", """
            [Interface]
            PrivateKey = \(clientKey)
            [Peer]
            PublicKey = \(aPublic)
            Endpoint = 192.0.2.1:51820
            Endpoint = 192.0.2.2:51820
            AllowedIPs = 10.1.0.0/24
            [Peer]
            PublicKey = \(bPublic)
            AllowedIPs = 10.2.0.0/24
            """)
        let one = ServerScene.write(daemon, "one", "[Interface]\nPrivateKey = \(clientKey)\n[Peer]\nPublicKey = \(aPublic)\nEndpoint = 192.0.2.1:51820\nAllowedIPs = 0.0.0.0/0\n")
        try daemon.writePolicy("[profile.work]\ntunnel.wireguard = \"\(two)\"\n")
        let checked = try daemon.vpnctl(["check", daemon.policyDirectory + "/10-test.toml"])
        #expect(checked.status != 0 && checked.stderr.contains("\(two):6:1: error: several Endpoints (servers of one key to choose from) need a file with one [Peer]; this one has 2"), "\(checked.stderr)")
        try daemon.writePolicy("[profile.work]\ntunnel.wireguard = \"\(one)\"\ntunnel.servers = \"fastest\"\n")
        let single = try daemon.vpnctl(["check", daemon.policyDirectory + "/10-test.toml"])
        #expect(single.status != 0 && single.stderr.contains("10-test.toml:3:18: error: profile work: tunnel.servers and tunnel.failover_after need several servers: \(one) has one [Peer] Endpoint"), "\(single.stderr)")
    }
}
