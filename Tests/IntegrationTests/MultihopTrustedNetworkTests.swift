import Foundation
import NetTestSupport
import Testing

/// Multihop meets trusted networks: the entry's rule disconnects it at "home" (a search
/// domain in the resolv.conf vpnd is given). The exit, which has no rules of its own, is
/// held: its transport never goes direct to the exit server (which would see the host's
/// address), its members are held, its status names the entry; back on another network
/// both hops carry the exit's members again. The topology is MultihopTests' (the exit
/// server behind the entry server).
@Suite(.serialized) struct MultihopTrustedNetworkTests {
    @Test func anEntryThatDisconnectsHoldsItsExit() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let exit = try ExitBehindServer(net, cleanup: cleanup)
        let entryInterface = "vx\(net.tag)i", exitInterface = "vx\(net.tag)o"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let resolvConf = daemon.policyDirectory + "/../resolv.conf"
        func network(search: String) throws {
            try "nameserver 192.0.2.53\nsearch \(search)\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        }
        try network(search: "cafe.example")
        daemon.extraArguments = ["--resolv-conf", resolvConf]
        let entryConf = try BuiltInTunnelPeer(net: net, daemon: daemon, cleanup: cleanup, network: "10.63.0", keepalive: 1, file: "entry", serverName: "n").conf
        // The exit keeps its session busy: a keepalive every second would leave direct at once.
        let exitConf = ServerScene.write(daemon, "exit", exit.clientFile + "\nPersistentKeepalive = 1\n")
        try daemon.writePolicy("""
            [profile.entry]
            tunnel = { wireguard = "\(entryConf)", interface = "\(entryInterface)" }
            trusted = [{ search_domain = "home.example", action = "disconnect" }]
            [profile.exit]
            tunnel = { wireguard = "\(exitConf)", interface = "\(exitInterface)", via = "entry" }
            """)
        for name in [entryInterface, exitInterface] {
            cleanup.add("remove \(name).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(name).sock") }
        }
        try daemon.start()
        func member() throws -> String {
            try Command.run(try daemon.vpnexec(profile: "exit", []) + ["python3", probe, "tcp", ExitBehindServer.target, "8080"]).trimmed
        }
        try eventually("a member's connection through both hops", seconds: 30) { (try? member()) == "10.64.0.2" }
        #expect(try daemon.status().profiles.first { $0.name == "exit" }?.trusted == nil, "no verdict while the entry connects")

        // Home: the entry steps aside; the exit is held, and nothing of it (its transport to
        // the exit server, its members' packets to the target) leaves on the physical link,
        // while a non-member's datagrams toward the target do (the positive control).
        let capture = try Capture(on: net.clientUplink, in: net.client,
                                  filter: "host \(ExitBehindServer.exitPublic) or host \(ExitBehindServer.target)", cleanup: cleanup)
        let control = try BackgroundProcess(net.client.enter + ["python3", probe, "udp-loop", ExitBehindServer.target, "9002"], cleanup: cleanup)
        try eventually("the capture to see the control") { try capture.countSoFar("udp port 9002") > 5 }
        let sender = try BackgroundProcess(try daemon.vpnexec(profile: "exit", ["python3", probe, "udp-loop", ExitBehindServer.target, "8080"]), cleanup: cleanup)
        try network(search: "home.example")
        try eventually("the exit held by its entry", seconds: 10) {
            let exit = try daemon.status().profiles.first { $0.name == "exit" }?.trusted
            return exit?.action == "block" && exit?.heldBy == "entry" && exit?.heldByAction == "disconnect"
        }
        // The exit's session was up with a keepalive a second and a member sending: had its
        // tunnel kept running, its transport would have left direct within these seconds.
        Thread.sleep(forTimeInterval: 3)
        // A reload that changes the exit's file while at home: a running exit would start a
        // new engine whose socket (the entry's mark, the entry's table empty) sends its first
        // initiation by the main table, straight to the exit server. Held, it does not start.
        FileManager.default.createFile(atPath: exitConf, contents: Data((exit.clientFile + "\nPersistentKeepalive = 1\n\n").utf8),
                                       attributes: [.posixPermissions: 0o600])
        #expect(try daemon.vpnctl(["reload"]).status == 0)
        Thread.sleep(forTimeInterval: 6)
        // Held: into the hold device (refused and counted), or at the unreachable route.
        #expect(sender.isRunning, "the member kept sending")
        #expect((try? member()) == nil, "a member's connection is refused")
        sender.stop()
        control.stop()
        _ = try capture.stop()
        let leaked = try capture.packets("not udp port 9002")
        #expect(leaked.isEmpty, "toward the exit server or the target on the physical link: \(leaked.prefix(5))")
        #expect(try capture.count("udp port 9002") > 20, "the capture saw the control")
        #expect(!exit.service.seen().contains { $0.contains(Topology.clientAddress4) }, "the target never saw the client")
        let status = try daemon.status()
        #expect(status.profiles.first { $0.name == "entry" }?.trusted?.action == "disconnect")
        let text = try daemon.vpnctl(["status"]).stdout
        #expect(text.contains("trusted   block (members held) for"), "\(text)")
        #expect(text.contains("profile entry, which carries this tunnel's transport (tunnel.via), disconnects"), "\(text)")
        #expect(daemon.process?.output.contains("trusted networks: profile exit blocks") == true)

        // Elsewhere again: both hops carry the exit's members.
        try network(search: "cafe.example")
        try eventually("a member's connection through both hops again", seconds: 40) { (try? member()) == "10.64.0.2" }
        #expect(try daemon.status().profiles.first { $0.name == "exit" }?.trusted == nil)
        #expect(daemon.process?.output.contains("trusted networks: profile exit connects again") == true)
    }
}
