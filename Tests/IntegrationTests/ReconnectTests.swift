import Foundation
import NetTestSupport
import Testing

/// `reconnect = { min, max }` on a built-in tunnel whose `vpn-server` stops answering: the
/// retries back off by the schedule, bounded by the cap, visible in `vpnctl status --json`;
/// a network change in the client namespace (the default route moved to another veth and
/// gateway) sends a handshake at once; the server answers again: the tunnel is up and the
/// attempts are back to 0.
@Suite(.serialized) struct ReconnectTests {
    @Test func retriesBackOffANetworkChangeHandshakesAtOnceAndTheServerComingBackResets() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let port = 51970
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        // PersistentKeepalive makes the tunnel start a handshake as soon as it runs.
        let peer = try BuiltInTunnelPeer(net: net, daemon: daemon, cleanup: cleanup, network: "10.79.0", port: port, keepalive: 25)
        // The server's namespace counts the initiations that reach it (type 1 in the first
        // byte after the UDP header) and, while the `block` table exists, drops its UDP.
        try net.server.run(["nft", "-f", "-"], input: """
            table inet count { chain input { type filter hook input priority -10; udp dport \(port) @th,64,8 1 counter; }; }
            table inet block { chain input { type filter hook input priority 0; udp dport \(port) drop; }; }
            """)
        func initiationsAtServer() throws -> Int {
            let text = try net.server.run(["nft", "list", "table", "inet", "count"])
            guard let range = text.range(of: "counter packets ") else { throw TestEnvironmentError("no counter: \(text)") }
            return Int(text[range.upperBound...].prefix { $0.isNumber }) ?? -1
        }
        // A second uplink for the client: another veth to the router, another gateway.
        let wifi = "vx\(net.tag)v"
        try Command.run(["ip", "link", "add", wifi, "netns", net.client.name, "type", "veth", "peer", "name", "vx\(net.tag)wv", "netns", net.wan.name])
        try net.client.run(["ip", "addr", "add", "172.16.77.2/24", "dev", wifi])
        try net.wan.run(["ip", "addr", "add", "172.16.77.1/24", "dev", "vx\(net.tag)wv"])
        try net.client.run(["ip", "link", "set", wifi, "up"])
        try net.wan.run(["ip", "link", "set", "vx\(net.tag)wv", "up"])

        let interface = "vx\(net.tag)b"
        try daemon.writePolicy("""
            [profile.work]
            tunnel.wireguard = "\(peer.conf)"
            tunnel.interface = "\(interface)"
            reconnect = { min = "5s", max = "20s" }
            """)
        BuiltInTunnelPeer.removeSocketAtCleanup(interface, cleanup)
        try daemon.start()

        struct Look { var at: Date; var attempts: UInt64; var nextTry: Double?; var lastError: String?; var schedule: String; var handshake: Double?; var demand: String? }
        func look() throws -> Look {
            let tunnel = try #require(try daemon.status().profiles.first?.tunnel)
            let engine = try #require(tunnel.wireguard)
            let reconnect = try #require(engine.reconnect, "no reconnect field: \(engine)")
            let peer = try #require(reconnect.peers.first)
            return Look(at: Date(), attempts: peer.attempts, nextTry: peer.nextTry, lastError: peer.lastError,
                        schedule: reconnect.schedule.description, handshake: engine.peers.first?.latestHandshake,
                        demand: tunnel.demand.map { "\($0.state): \($0.reason)" })
        }

        // The server does not answer: attempts at about 0, 5, 15 and 35 s.
        var looks: [Look] = []
        let start = Date()
        while Date().timeIntervalSince(start) < 60 {
            let l = try look()
            looks.append(l)
            if l.attempts >= 4, let next = l.nextTry, next < 14, next > 8 { break }
            Thread.sleep(forTimeInterval: 0.5)
        }
        let last = try #require(looks.last)
        #expect(last.schedule == "backoff 5s..20s x2, at most 6/min")
        #expect(last.attempts >= 4 && last.lastError == "no-response" && last.handshake == nil, "\(last)")
        #expect(looks.allSatisfy { ($0.nextTry ?? 0) <= 20 * 16 / 15 + 0.5 }, "a next try past the cap: \(looks.map(\.nextTry))")
        // Always up, yet no handshake: connecting all along, never up.
        #expect(looks.allSatisfy { $0.demand == "connecting: vpnd started the tunnel" }, "\(Set(looks.map(\.demand)))")
        // When each attempt was first seen: the gaps grow (5, 10, 20 s; generous bounds).
        var firstSeen: [UInt64: Date] = [:]
        for l in looks where firstSeen[l.attempts] == nil { firstSeen[l.attempts] = l.at }
        if let a2 = firstSeen[2], let a3 = firstSeen[3], let a4 = firstSeen[4] {
            #expect(a3.timeIntervalSince(a2) > 7 && a4.timeIntervalSince(a3) > 15, "gaps \(a3.timeIntervalSince(a2)), \(a4.timeIntervalSince(a3))")
        } else {
            Issue.record("attempts 2, 3 and 4 were not all seen: \(looks.map(\.attempts))")
        }
        let counted = try initiationsAtServer()
        #expect(UInt64(counted) <= last.attempts && UInt64(counted) + 1 >= last.attempts, "server saw \(counted), status says \(last.attempts)")
        let text = try daemon.vpnctl(["status"]).stdout
        #expect(text.contains("reconnect backoff 5s..20s x2, at most 6/min") && text.contains(" since the last handshake, last error: no response, next try in"), "\(text)")

        let metrics = try daemon.vpnctl(["metrics"]).stdout
        let peerLabels = "profile=\"work\",peer=\"\(peer.serverPublic)\""
        #expect(metrics.contains("vpnexec_peer_handshake_attempts{\(peerLabels)} ") && metrics.contains("vpnexec_peer_next_handshake_timestamp_seconds{\(peerLabels)} ")
                && metrics.contains("vpnexec_peer_handshake_error{\(peerLabels),error=\"no-response\"} 1")
                && metrics.contains("vpnexec_peer_reconnect_schedule{\(peerLabels),schedule=\"backoff\"} 1"), "\(metrics)")

        // The network changes (the default route moves to the other uplink) while the next
        // try is 8 s or more away: an initiation reaches the server within 3 s.
        let before = try initiationsAtServer()
        let changedAt = Date()
        try net.client.run(["ip", "route", "replace", "default", "via", "172.16.77.1", "dev", wifi])
        try eventually("an initiation after the network change", seconds: 3) { try initiationsAtServer() > before }
        #expect(Date().timeIntervalSince(changedAt) < 3)
        let afterChange = try look()
        #expect(afterChange.attempts <= 2 && (afterChange.nextTry ?? 99) <= 5.5, "the backoff started again: \(afterChange)")

        // The server answers again: up within the next try (5 s after the reset), attempts 0.
        try net.server.run(["nft", "delete", "table", "inet", "block"])
        try eventually("the tunnel to come up", seconds: 15) { try look().handshake != nil }
        let up = try look()
        #expect(up.attempts == 0 && up.lastError == nil && up.nextTry == nil, "\(up)")
        try eventually("the tunnel to report up") { try look().demand == "up: vpnd started the tunnel" }
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        _ = try net.startServices()
        #expect(try Command.run(try daemon.vpnexec(profile: "work", []) + ["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == "10.79.0.2")
    }
}
