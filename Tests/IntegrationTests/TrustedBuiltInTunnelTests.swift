import Foundation
import NetTestSupport
import Testing

/// Trusted networks with a built-in tunnel, matched by the DNS search domain: vpnd reads
/// the resolv.conf it is given on each evaluation; a profile that steps aside stops its
/// engine (the interface goes) and starts it again when the network is no longer trusted.
@Suite(.serialized) struct TrustedBuiltInTunnelTests {
    @Test func searchDomainStopsAndRestartsTheEngine() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        _ = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let resolvConf = daemon.policyDirectory + "/../resolv.conf"
        func network(search: String) throws {
            try "nameserver 192.0.2.53\nsearch \(search)\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        }
        try network(search: "office.example")
        daemon.extraArguments = ["--resolv-conf", resolvConf]
        let peer = try BuiltInTunnelPeer(net: net, daemon: daemon, cleanup: cleanup)
        try daemon.writePolicy("""
            [profile.work]
            tunnel.wireguard = "\(peer.conf)"
            tunnel.interface = "\(interface)"

            [[profile.work.trusted]]
            search_domain = "home.example"
            action = "disconnect"
            """)
        BuiltInTunnelPeer.removeSocketAtCleanup(interface, cleanup)
        try daemon.start()
        func member() throws -> String {
            try Command.run(try daemon.vpnexec(profile: "work", ["python3", probe, "tcp", Topology.service4, "8080"])).trimmed
        }
        func linkExists() throws -> Bool { try net.client.status(["ip", "link", "show", interface]).status == 0 }
        #expect(try member() == "10.78.0.2")
        #expect(try daemon.status().profiles[0].trusted?.network.searchDomains == ["office.example"])

        try network(search: "lan home.example")
        try eventually("the engine to stop at home", seconds: 15) { try daemon.status().profiles[0].trusted?.action == "disconnect" && !linkExists() }
        let home = try #require(try daemon.status().profiles[0].trusted)
        #expect(home.rule == 1 && home.matched == ["search_domain": "home.example"], "\(home)")
        #expect(try member() == Topology.clientAddress4, "the member goes direct")
        #expect(daemon.process?.output.contains("built-in tunnel \(interface) stopped") == true)

        try network(search: "office.example")
        try eventually("the engine back at the office", seconds: 15) { try daemon.status().profiles[0].trusted?.action == "connect" && linkExists() }
        try eventually("the member through the tunnel again", seconds: 15) { (try? member()) == "10.78.0.2" }
    }
}
