import Control
import Foundation
import NetTestSupport
import Testing

/// `vpnctl metrics` and `vpnctl status --json` from a vpnd with a built-in tunnel that has
/// completed a handshake, read by independent parsers: prometheus_client's text parser and
/// Python's json, each checked against the other; the metrics linted by promtool.
@Suite(.serialized) struct MetricsTests {
    @Test func metricsParseAndAgreeWithTheStatus() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let interface = "vx\(net.tag)m"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let peer = try BuiltInTunnelPeer(net: net, daemon: daemon, cleanup: cleanup, allowedIPs: "10.78.0.0/24", keepalive: 1)
        try daemon.writePolicy("""
            [profile.work]
            tunnel.wireguard = "\(peer.conf)"
            tunnel.interface = "\(interface)"
            [profile.home]
            tunnel.interface = "vx\(net.tag)none"
            killswitch = false
            """)
        BuiltInTunnelPeer.removeSocketAtCleanup(interface, cleanup)
        try daemon.start()
        // From the start "connecting", and "up" only with a handshake (the tunnel sees it at its
        // next tick, so a look between the two is connecting with one).
        try eventually("the built-in tunnel's handshake") {
            guard let tunnel = try daemon.status().profiles.first?.tunnel else { return false }
            let handshake = tunnel.wireguard?.peers.first?.latestHandshake
            #expect(tunnel.demand?.state == "connecting" || (tunnel.demand?.state == "up" && handshake != nil),
                    "\(String(describing: tunnel.demand)), latest handshake \(String(describing: handshake))")
            return tunnel.demand?.state == "up"
        }

        let directory = daemon.policyDirectory + "/.."
        let json = try daemon.vpnctl(["status", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let metrics = try daemon.vpnctl(["metrics", "--output", directory + "/vpnexec.prom"])
        #expect(metrics.status == 0 && metrics.stdout.isEmpty, "\(metrics.stderr)")
        try json.stdout.write(toFile: directory + "/status.json", atomically: true, encoding: .utf8)
        // Prometheus' own linter on what a live vpnd's vpnctl wrote (the unit test lints a
        // rendered report with every field set; this one what vpnd fills in).
        let lint = try Command.status(["promtool", "check", "metrics"], input: try String(contentsOfFile: directory + "/vpnexec.prom", encoding: .utf8))
        #expect(lint.status == 0 && lint.stdout.isEmpty && lint.stderr.isEmpty, "promtool check metrics: \(lint.status) \(lint.stdout)\(lint.stderr)")
        let script = try PythonScript.write("metrics.py", cleanup: cleanup)
        let parsed = try Command.status(["python3", script, directory + "/vpnexec.prom", directory + "/status.json", "\(StatusReport.currentSchema)"])
        #expect(parsed.status == 0, "prometheus_client and json: \(parsed.stderr)")
        struct Sample: Decodable { var name: String; var labels: [String: String]; var type: String; var value: Double }
        let samples = try parsed.stdout.split(separator: "\n").map { try JSONDecoder().decode(Sample.self, from: Data($0.utf8)) }
        func sample(_ name: String, _ labels: [String: String]) -> Sample? { samples.first { $0.name == name && $0.labels == labels } }

        #expect(sample("vpnexec_tunnel_up", ["profile": "work", "interface": interface])?.value == 1)
        #expect(sample("vpnexec_tunnel_up", ["profile": "home", "interface": "vx\(net.tag)none"])?.value == 0)
        #expect(sample("vpnexec_profile_killswitch", ["profile": "home"])?.value == 0)
        // An always-up built-in tunnel after its handshake: "up", one sample per state; none for a
        // tunnel vpnd does not own.
        let states = samples.filter { $0.name == "vpnexec_tunnel_demand_state" }
        #expect(states.count == 4 && states.allSatisfy { $0.type == "gauge" && $0.labels["profile"] == "work" }, "\(states)")
        #expect(sample("vpnexec_tunnel_demand_state", ["profile": "work", "interface": interface, "state": "up"])?.value == 1)
        #expect(sample("vpnexec_tunnel_demand_state", ["profile": "work", "interface": interface, "state": "down-on-demand"])?.value == 0)
        #expect(sample("vpnexec_tunnel_demand_since_timestamp_seconds", ["profile": "work", "interface": interface]).map { abs($0.value - Date().timeIntervalSince1970) < 600 } == true)
        let handshake = try #require(sample("vpnexec_peer_latest_handshake_timestamp_seconds", ["profile": "work", "peer": peer.serverPublic]), "\(samples.map(\.name))")
        #expect(handshake.type == "gauge" && abs(Date().timeIntervalSince1970 - handshake.value) < 60)
        // vpnd's start applied its policy: the last reload's success, and vpnd's version.
        #expect(sample("vpnexec_last_reload_successful", [:])?.value == 1)
        #expect(sample("vpnexec_last_reload_success_timestamp_seconds", [:]).map { abs($0.value - Date().timeIntervalSince1970) < 600 } == true)
        #expect(samples.contains { $0.name == "vpnexec_build_info" && $0.labels["version"] != nil && $0.value == 1 }, "\(samples.map(\.name))")
        let drops = samples.filter { $0.name == "vpnexec_engine_dropped_packets_total" && $0.labels["profile"] == "work" }
        #expect(Set(drops.compactMap { $0.labels["reason"] }).isSuperset(of: ["badMAC", "replay", "unknownPeer", "notAllowedIP"]), "\(drops)")
        #expect(drops.allSatisfy { $0.type == "counter" })
        #expect(sample("vpnexec_tunnel_transmit_bytes_total", ["profile": "work", "interface": interface]).map { $0.value > 0 } == true,
                "the handshake went out through the tunnel's engine")
        #expect(sample("vpnexec_tunnel_loop_dropped_packets_total", ["profile": "work", "interface": interface])?.value == 0,
                "the built-in engine's transport never loops")
        let work = try #require(try daemon.status().profiles.first { $0.name == "work" })
        #expect(work.tunnel.transport?.source == "built-in" && work.tunnel.transport?.udpPort == work.tunnel.wireguard?.listenPort
                && work.tunnel.transport?.owner == 0, "vpnd's own engine: its socket kept out of every profile: \(String(describing: work.tunnel.transport))")
        #expect(!json.stdout.contains(peer.clientKey), "no private key in the status")
        _ = peer.clientPublic
    }
}
