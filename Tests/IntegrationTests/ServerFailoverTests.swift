import Control
import Foundation
import NetTestSupport
import Testing

/// A built-in tunnel with several servers (`tunnel.wireguard` as a list, `tunnel.servers`),
/// against `vpn-server`s in the server namespace.
@Suite(.serialized) struct ServerFailoverTests {
    /// failover with `failover_after = 2`: the first server is dead (nothing answers on its
    /// port); once two initiations went unanswered (10 s at WireGuard's 5 s: the third
    /// leaves then) the second serves (plus its own handshake and vpnd's one-second look),
    /// and a member sending all along leaks nothing meanwhile.
    @Test func theSecondServerServesWhenTheFirstIsDeadAndNothingGoesDirect() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scene = try ServerScene(cleanup: cleanup)
        let (net, services, probe, daemon) = (scene.net, scene.services, scene.probe, scene.daemon)
        let (_, deadPublic) = try WireGuardGo.keyPair()
        let (_, livePublic) = try scene.server("l", port: 51971, subnet: 66)
        let dead = scene.clientFile("dead", subnet: 66, serverPublic: deadPublic, port: 51970)
        let live = scene.clientFile("live", subnet: 66, serverPublic: livePublic, port: 51971)
        try scene.policy(tunnel: "wireguard = [\"\(dead)\", \"\(live)\"], servers = \"failover\", failover_after = 2")
        let capture = try LeakWatch(on: net.clientUplink, in: net.client, probe: probe, cleanup: cleanup)
        try daemon.start()
        let started = Date()
        let sender = try scene.sendingMember()
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
        #expect(try scene.memberSees() == "10.66.0.2")
        let text = try daemon.vpnctl(["status"]).stdout
        #expect(text.contains("servers   failover: \(live) (up), 2 of 2: server 1 left 2 initiations unanswered"), "\(text)")
        #expect(daemon.process?.output.contains("server 2 of 2 (\(live)): server 1 left 2 initiations unanswered") == true)
        print("failover: the second server served \(String(format: "%.1f", elapsed)) s after vpnd started")
    }

    /// failover while in use, on demand, with a container: the tunnel is down until its first
    /// member, a process in a container's network namespace (a veth with the runtime's NAT,
    /// as ContainerHoldTests builds it) whose datagrams go through the first server from the
    /// tunnel's address. Then the first server dies under it and a host member: WireGuard
    /// starts a new handshake 15 s after data went unanswered (counted from the last packet
    /// the server sent, which may be up to 10 s before it died: its passive keepalive), and
    /// after 3 (the default) unanswered initiations, 15 s more, the second serves both, the
    /// container no more than 3 s after the host member (the new tunnel's address, which its
    /// masquerade gives once the old interface's NAT is gone); nothing went direct.
    @Test func aServerThatDiesInUseGivesWayToTheNext() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scene = try ServerScene(cleanup: cleanup)
        let (net, services, probe, daemon) = (scene.net, scene.services, scene.probe, scene.daemon)
        let (firstServer, firstPublic) = try scene.server("l", port: 51971, subnet: 66)
        let (_, secondPublic) = try scene.server("m", port: 51972, subnet: 69)
        let first = scene.clientFile("first", subnet: 66, serverPublic: firstPublic, port: 51971)
        let second = scene.clientFile("second", subnet: 69, serverPublic: secondPublic, port: 51972)
        try scene.policy(tunnel: "wireguard = [\"\(first)\", \"\(second)\"]", more: "on_demand = true\n")
        let container = try scene.container("k", network: "10.98.0")
        let containerService = try Services(in: net.server, addresses: [Topology.service4], port: 8081, cleanup: cleanup)
        let capture = try LeakWatch(on: net.clientUplink, in: net.client, probe: probe, members: [8080, 8081], cleanup: cleanup)
        try daemon.start()
        func demand() throws -> TunnelDemandStatus? { try daemon.status().profiles.first?.tunnel.demand }
        let atStart = try demand()
        #expect(atStart?.state == "down-on-demand", "\(String(describing: atStart))")
        let inContainer = try scene.containerMember(container, port: 8081)
        try eventually("the container's datagrams through the first server", seconds: 20) { containerService.count("udp 10.66.0.2") > 5 }
        let cameUp = try demand()
        #expect(cameUp?.reason == "a member appeared", "\(String(describing: cameUp))")
        #expect(try daemon.status().routedNamespaces.map(\.interfaces) == [["vx\(net.tag)kh"]])
        let sender = try scene.sendingMember()
        try eventually("the member's datagrams through the first server", seconds: 20) { services.count("udp 10.66.0.2") > 5 }
        firstServer.process.kill9()
        let killed = Date()
        try eventually("the member's datagrams through the second server", seconds: 60) { services.count("udp 10.69.0.2") > 5 }
        let elapsed = Date().timeIntervalSince(killed)
        try eventually("the container's datagrams through the second server", seconds: 10) { containerService.count("udp 10.69.0.2") > 5 }
        let containerElapsed = Date().timeIntervalSince(killed)
        sender.stop()
        inContainer.kill9()
        let (leaked, control) = try capture.stop()
        #expect(leaked.isEmpty, "member packets (the host's to 8080, the container's to 8081) left in the clear while the tunnel came up or switched: \(leaked.count): \(leaked.prefix(5))")
        #expect(control > 20, "the capture saw the non-member's datagrams")
        #expect(Set(containerService.seen()) == ["udp 10.66.0.2", "udp 10.69.0.2"], "\(Set(containerService.seen()))")
        #expect(elapsed >= 19 && elapsed < 40, "switched \(elapsed) s after the server died: 15 s before a new handshake, then 3 unanswered at 5 s")
        #expect(containerElapsed < elapsed + 3, "the container's datagrams through the second server \(containerElapsed) s after the server died, the host member's \(elapsed) s")
        let servers = try #require(try daemon.status().profiles.first?.tunnel.servers)
        #expect(servers.current == second && servers.reason == "server 1 stopped answering (3 initiations unanswered)", "\(servers)")
        print("failover in use: the second server served \(String(format: "%.1f", elapsed)) s after the first died (the container: \(String(format: "%.1f", containerElapsed)) s)")
    }

    /// fastest: the first server sits behind a relay that holds each datagram 300 ms each
    /// way (the kernel has no netem); the second answers at once and is chosen.
    @Test func fastestPicksTheNearerOfTwo() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scene = try ServerScene(cleanup: cleanup)
        let (services, daemon) = (scene.services, scene.daemon)
        let (_, farPublic) = try scene.server("f", port: 51974, subnet: 67)
        let (_, nearPublic) = try scene.server("n", port: 51976, subnet: 68)
        try scene.relay(listen: 51975, target: 51974, delay: "0.3")
        let far = scene.clientFile("far", subnet: 67, serverPublic: farPublic, port: 51975)
        let near = scene.clientFile("near", subnet: 68, serverPublic: nearPublic, port: 51976)
        try scene.policy(tunnel: "wireguard = [\"\(far)\", \"\(near)\"], servers = \"fastest\"")
        try daemon.start()
        try eventually("the fastest server chosen and up", seconds: 40) {
            let s = try daemon.status().profiles.first?.tunnel.servers
            return s?.state == "up" && s?.reason.hasPrefix("fastest") == true
        }
        let servers = try #require(try daemon.status().profiles.first?.tunnel.servers)
        #expect(servers.current == near, "\(servers)")
        let trips = servers.roundTripsMs
        #expect(trips.count == 2 && (trips[0] ?? 0) >= 590 && (trips[1] ?? 1000) < (trips[0] ?? 0) - 300, "round trips \(trips)")
        #expect(try scene.memberSees() == "10.68.0.2")
        #expect(!services.seen().contains("tcp 10.67.0.2"))
        print("fastest: round trips \(trips.map { $0.map(String.init) ?? "-" }) ms; \(servers.reason)")
    }

    /// fastest, measured again when the host's network changes: both servers behind relays
    /// whose delays the test sets; the near one becomes the far one, the client's physical
    /// interface gets another address, and vpnd moves to the other server.
    @Test func fastestMeasuresAgainWhenTheNetworkChanges() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scene = try ServerScene(cleanup: cleanup)
        let (net, daemon) = (scene.net, scene.daemon)
        let (_, aPublic) = try scene.server("f", port: 51974, subnet: 67)
        let (_, bPublic) = try scene.server("n", port: 51976, subnet: 68)
        func delayFile(_ seconds: String) throws -> String {
            let path = NSTemporaryDirectory() + "vx-\(uniqueTag())-delay"
            try seconds.write(toFile: path, atomically: true, encoding: .utf8)
            cleanup.add("remove \(path)") { try? FileManager.default.removeItem(atPath: path) }
            return path
        }
        let aDelay = try delayFile("0.2"), bDelay = try delayFile("0")
        try scene.relay(listen: 51975, target: 51974, delay: aDelay)
        try scene.relay(listen: 51977, target: 51976, delay: bDelay)
        let a = scene.clientFile("a", subnet: 67, serverPublic: aPublic, port: 51975)
        let b = scene.clientFile("b", subnet: 68, serverPublic: bPublic, port: 51977)
        try scene.policy(tunnel: "wireguard = [\"\(a)\", \"\(b)\"], servers = \"fastest\"")
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
        #expect(try scene.memberSees() == "10.67.0.2")
        #expect(daemon.process?.output.contains("network changed: measuring the handshake round trip of each server") == true)
    }
}
