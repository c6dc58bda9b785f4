import Foundation
import NetTestSupport
import Testing

/// Multihop (`tunnel.via`): profile `exit`'s built-in tunnel sends its encrypted UDP through
/// profile `entry`'s built-in tunnel. Two `vpn-server`s: the entry in the usual server
/// namespace (203.0.113.2), the exit in a namespace of its own that only the entry server
/// can reach (192.0.2.130, behind the entry server on a link of their own; the router the
/// client uses has no route to it), with a target host on its loopback (192.0.2.200).
@Suite(.serialized) struct MultihopTests {
    @Test func theExitTunnelRidesInsideTheEntryAndNothingLeaksWhenEitherHopDies() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let exit = try ExitBehindServer(net, cleanup: cleanup)
        let targetService = exit.service
        let exitNS = exit.namespace
        let exitPublic = exit.clientPublic
        let entryServerName = "vx\(net.tag)n", exitServerName = exit.server.name
        let exitServer = exit.server

        let entryInterface = "vx\(net.tag)i", exitInterface = "vx\(net.tag)o"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let entry = try BuiltInTunnelPeer(net: net, daemon: daemon, cleanup: cleanup, network: "10.63.0", keepalive: 1, file: "entry", serverName: "n")
        let (entryServer, entryPublic, entryConf) = (entry.server, entry.clientPublic, entry.conf)
        let exitConf = ServerScene.write(daemon, "exit", exit.clientFile)
        try daemon.writePolicy("""
            [profile.entry]
            tunnel = { wireguard = "\(entryConf)", interface = "\(entryInterface)" }
            [profile.exit]
            tunnel = { wireguard = "\(exitConf)", interface = "\(exitInterface)", via = "entry" }
            """)
        for name in [entryInterface, exitInterface] {
            cleanup.add("remove \(name).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(name).sock") }
        }
        // Everything IPv4 on the client's physical link, from before vpnd starts.
        let wire = try Capture(on: net.clientUplink, in: net.client, filter: "ip", cleanup: cleanup)
        try daemon.start()

        func member(_ mode: String = "tcp") throws -> String {
            try Command.run(try daemon.vpnexec(profile: "exit", []) + ["python3", probe, mode, ExitBehindServer.target, "8080"]).trimmed
        }
        // The exit's first handshake may wait for the entry's (it is held until then).
        var seen = ""
        try eventually("a member's connection through both hops", seconds: 30) { seen = (try? member()) ?? ""; return !seen.isEmpty }
        #expect(seen == "10.64.0.2", "the target saw the exit tunnel's address")

        // The exit server saw the entry hop's address (the entry server's, after its NAT),
        // never the client's; the entry server saw the client.
        func endpoints(_ ns: NetworkNamespace, _ name: String) throws -> String { try ns.run(["wg", "show", name, "endpoints"]) }
        let exitSaw = try endpoints(exitNS, exitServerName)
        #expect(exitSaw.contains("\(exitPublic)\t\(ExitBehindServer.entryBeforeExit):"), "\(exitSaw)")
        #expect(!exitSaw.contains(Topology.clientAddress4))
        #expect(try endpoints(net.server, entryServerName).contains("\(entryPublic)\t\(Topology.clientAddress4):"))

        // Status: the hop, its entry up, the transport carried.
        let status = try daemon.status()
        let exitStatus = try #require(status.profiles.first { $0.name == "exit" })
        #expect(exitStatus.via?.entry == "entry" && exitStatus.via?.entryInterface == entryInterface && exitStatus.via?.entryState == "up")
        #expect((exitStatus.via?.carried.packets ?? 0) > 0, "route_output sent the exit's transport into the entry")
        #expect(status.profiles.first { $0.name == "entry" }?.via == nil)
        // The exit's socket carries the entry's mark; the entry's the bypass mark.
        let entryStatus = try #require(status.profiles.first { $0.name == "entry" })
        #expect(exitStatus.tunnel.transport?.fwmark == "0x" + String(entryStatus.mark, radix: 16), "\(String(describing: exitStatus.tunnel.transport))")
        let bypassMark = try #require(entryStatus.tunnel.transport?.fwmark)
        let text = try daemon.vpnctl(["status"]).stdout
        #expect(text.contains("via       profile entry (\(entryInterface): up)"), "\(text)")

        // On the physical link: only UDP between the client and the entry server.
        let onTheWire = try wire.stop()
        #expect(onTheWire.count > 5, "the capture saw the entry's transport")
        let other = try wire.packets("not (udp and host \(Topology.serverUplink4) and port 51960)")
        #expect(other.isEmpty, "packets other than the entry's transport on the physical link: \(other.prefix(5))")

        // The entry tunnel goes down on the client: the exit's transport is held, then it
        // comes back through the entry once the entry is up again.
        try Self.holds(net, daemon, probe, cleanup, "entry tunnel down") { try net.client.run(["ip", "link", "set", entryInterface, "down"]) }
        #expect(try daemon.status().profiles.first { $0.name == "exit" }?.via?.entryState == "down")
        try net.client.run(["ip", "link", "set", entryInterface, "up"])
        try eventually("the exit hop through the entry again", seconds: 30) { (try? member()) == "10.64.0.2" }

        // The exit server dies, then the entry server.
        try Self.holds(net, daemon, probe, cleanup, "exit server killed") { exitServer.process.kill9() }
        try Self.holds(net, daemon, probe, cleanup, "entry server killed") { entryServer.process.kill9() }
        #expect(!targetService.seen().contains { $0.contains(Topology.clientAddress4) }, "the target never saw the client")

        // A reload without `via`: the exit's tunnel starts again, its socket with the bypass mark.
        try daemon.writePolicy("""
            [profile.entry]
            tunnel = { wireguard = "\(entryConf)", interface = "\(entryInterface)" }
            [profile.exit]
            tunnel = { wireguard = "\(exitConf)", interface = "\(exitInterface)" }
            """)
        #expect(try daemon.vpnctl(["reload"]).status == 0)
        try eventually("the exit's socket to carry the bypass mark") {
            let exit = try daemon.status().profiles.first { $0.name == "exit" }
            return exit?.via == nil && exit?.tunnel.transport?.fwmark == bypassMark
        }
    }

    /// Members of `exit` send to the target while `change` breaks a hop; the capture
    /// must see the control (a non-member sending toward the target, which the router
    /// drops further on) and nothing toward the exit server or from a member.
    static func holds(_ net: Topology, _ daemon: DaemonHarness, _ probe: String, _ cleanup: Cleanup, _ what: String, _ change: () throws -> Void) throws {
        let capture = try Capture(on: net.clientUplink, in: net.client,
                                  filter: "host \(ExitBehindServer.exitPublic) or host \(ExitBehindServer.target)", cleanup: cleanup)
        let control = try BackgroundProcess(net.client.enter + ["python3", probe, "udp-loop", ExitBehindServer.target, "9002"], cleanup: cleanup)
        try eventually("the capture to see the control") { try capture.countSoFar("udp port 9002") > 5 }
        try change()
        let sender = try BackgroundProcess(try daemon.vpnexec(profile: "exit", ["python3", probe, "udp-loop", ExitBehindServer.target, "8080"]), cleanup: cleanup)
        let sentBefore = try daemon.status().profiles.first { $0.name == "exit" }?.sent.packets ?? 0
        Thread.sleep(forTimeInterval: 3)
        #expect((try daemon.status().profiles.first { $0.name == "exit" }?.sent.packets ?? 0) > sentBefore + 50, "\(what): the member kept sending")
        sender.stop()
        control.stop()
        _ = try capture.stop()
        let leaked = try capture.packets("not udp port 9002")
        #expect(leaked.isEmpty, "\(what): toward the exit server or the target on the physical link: \(leaked.prefix(5))")
        #expect(try capture.count("udp port 9002") > 20, "\(what): the capture saw the control")
    }

    /// The entry is an interface tunnel (wireguard-go's, to a wireguard-go server that
    /// forwards without NAT): the exit server sees the entry tunnel's address.
    @Test func anInterfaceTunnelCanBeTheEntry() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scenario = try Scenario(cleanup: cleanup, start: false) { _ in "" }
        let net = scenario.net, daemon = scenario.daemon, probe = scenario.probe
        let exit = try ExitBehindServer(net, cleanup: cleanup)
        try net.server.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        let exitInterface = "vx\(net.tag)o"
        let exitConf = URL(fileURLWithPath: daemon.policyDirectory + "/../exit.conf").standardized.path
        FileManager.default.createFile(atPath: exitConf, contents: Data(exit.clientFile.utf8), attributes: [.posixPermissions: 0o600])
        cleanup.add("remove \(exitInterface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(exitInterface).sock") }
        try daemon.writePolicy("""
            [profile.entry]
            tunnel.interface = "\(scenario.tunnel.clientInterface)"
            [profile.exit]
            tunnel = { wireguard = "\(exitConf)", interface = "\(exitInterface)", via = "entry" }
            """)
        let wire = try Capture(on: net.clientUplink, in: net.client, filter: "host \(ExitBehindServer.exitPublic) or host \(ExitBehindServer.target)", cleanup: cleanup)
        try daemon.start()
        var seen = ""
        try eventually("a member's connection through both hops", seconds: 30) {
            seen = (try? Command.run(try daemon.vpnexec(profile: "exit", []) + ["python3", probe, "tcp", ExitBehindServer.target, "8080"]).trimmed) ?? ""
            return !seen.isEmpty
        }
        #expect(seen == "10.64.0.2", "the target saw the exit tunnel's address")
        let exitSaw = try exit.namespace.run(["wg", "show", exit.server.name, "endpoints"])
        #expect(exitSaw.contains("\(exit.clientPublic)\t\(scenario.tunnel.clientAddress4):"), "the exit saw the entry tunnel's address: \(exitSaw)")
        // The control: a non-member's datagram toward the target leaves on the physical link.
        try Command.run(net.client.enter + ["python3", "-c", "import socket; socket.socket(2, 2).sendto(b'x', ('\(ExitBehindServer.target)', 9002))"])
        try eventually("the capture to see the control") { try wire.countSoFar("udp port 9002") > 0 }
        _ = try wire.stop()
        #expect(try wire.count("udp port 9002") == 1, "the capture saw the non-member's datagram")
        #expect(try wire.packets("not udp port 9002").isEmpty, "toward the exit server or the target on the physical link")
        try Self.holds(net, daemon, probe, cleanup, "entry interface down") { try scenario.tunnel.setClientLink(up: false) }
    }
}

/// The exit server's namespace, hanging off the usual server namespace (the entry's) on a
/// link of their own: the router the client uses has no route to it. A `vpn-server` listens
/// on 192.0.2.130:51961 (its tunnel 10.64.0.0/24, masquerading), and a reporting service on
/// 192.0.2.200 (its loopback) is the host behind it.
final class ExitBehindServer {
    static let exitPublic = "192.0.2.130", entryBeforeExit = "192.0.2.129", target = "192.0.2.200"
    let namespace: NetworkNamespace
    let service: Services
    let server: OurTunnel
    let clientKey: String, clientPublic: String
    /// The client's wg-quick file for the exit (10.64.0.2).
    let clientFile: String

    init(_ net: Topology, cleanup: Cleanup) throws {
        namespace = try NetworkNamespace("vx\(net.tag)x", cleanup: cleanup)
        try Command.run(["ip", "link", "add", "vx\(net.tag)xe", "netns", net.server.name, "type", "veth", "peer", "name", "vx\(net.tag)xu", "netns", namespace.name])
        for (ns, name, address) in [(net.server, "vx\(net.tag)xe", "\(Self.entryBeforeExit)/30"), (namespace, "vx\(net.tag)xu", "\(Self.exitPublic)/30")] {
            try ns.run(["ip", "addr", "add", address, "dev", name])
            try ns.run(["ip", "link", "set", name, "up"])
        }
        try namespace.run(["ip", "link", "set", "lo", "up"])
        try namespace.run(["ip", "route", "add", "default", "via", Self.entryBeforeExit])
        try namespace.run(["ip", "addr", "add", "\(Self.target)/32", "dev", "lo"])
        service = try Services(in: namespace, addresses: [Self.target], port: 8080, cleanup: cleanup)
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        (clientKey, clientPublic) = try WireGuardGo.keyPair()
        server = try OurTunnel(in: namespace, name: "vx\(net.tag)X", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51961
            Address = 10.64.0.1/24
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.64.0.2/32
            """)
        clientFile = """
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.64.0.2/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Self.exitPublic):51961
            AllowedIPs = 0.0.0.0/0
            """
    }
}
