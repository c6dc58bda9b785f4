import Control

extension StatusText {
    /// The built-in engine's retries: the schedule, then per peer that is retrying (or whose
    /// last try failed) the attempts, the last error and the next try.
    static func reconnect(_ r: ReconnectReport) -> [String] {
        var lines = ["  reconnect \(r.schedule)"]
        for peer in r.peers where peer.attempts > 0 || peer.lastError != nil {
            var text = "  retrying  \(peer.publicKey): \(peer.attempts) attempt(s) since the last handshake"
            if let error = peer.lastError { text += ", last error: \(error)" }
            text += peer.nextTry.map { ", next try in \(Int($0.rounded(.up))) s" } ?? ", no try due (waits for traffic)"
            lines.append(text)
        }
        return lines
    }
}

extension MetricsText {
    /// The built-in engines' retries, per peer.
    static func reconnectFamilies(_ engines: [(String, WireGuardReport)]) -> [Family] {
        let peers = engines.flatMap { profile, wg in
            wg.reconnect.map { reconnect in reconnect.peers.map { (profile, reconnect.schedule, $0) } } ?? []
        }
        func labels(_ profile: String, _ peer: ReconnectPeerReport) -> [(String, String)] { [("profile", profile), ("peer", peer.publicKey)] }
        return [
            Family(name: "vpnexec_peer_handshake_attempts", type: "gauge", help: "Handshake initiations to the peer since the last completed handshake (or network change).",
                   samples: peers.map { Sample(labels: labels($0.0, $0.2), value: Double($0.2.attempts)) }),
            Family(name: "vpnexec_peer_next_handshake_seconds", type: "gauge", help: "Seconds until the next handshake initiation to the peer (peers with one due).",
                   samples: peers.compactMap { p in p.2.nextTry.map { Sample(labels: labels(p.0, p.2), value: $0) } }),
            Family(name: "vpnexec_peer_handshake_error", type: "gauge", help: "1 with the last handshake error toward the peer (no response, send failed: ..., cookie required, storm limit).",
                   samples: peers.compactMap { p in p.2.lastError.map { Sample(labels: labels(p.0, p.2) + [("error", $0)], value: 1) } }),
            Family(name: "vpnexec_peer_reconnect_schedule", type: "gauge", help: "1 with the reconnection schedule in force for the peer.",
                   samples: peers.map { Sample(labels: labels($0.0, $0.2) + [("schedule", $0.1)], value: 1) }),
        ]
    }
}
