/// `vpnctl metrics`: the status report in Prometheus' text exposition format (version
/// 0.0.4), for node_exporter's textfile collector. Counters are the kernel's and the
/// engines' own, kept across reloads, so they only grow while vpnd runs. Names follow
/// Prometheus' rules (`promtool check metrics`): base units, `_total` for counters, points
/// in time as `_timestamp_seconds` (a textfile is read up to 15 s after it was written: an
/// age would be stale, a time is not), label values from bounded sets. Host-wide families
/// are left out of a user's view, as the report leaves their values out.
public enum MetricsText {
    struct Sample {
        var labels: [(String, String)]
        var value: Double
    }

    struct Family {
        var name: String
        var type: String
        var help: String
        var samples: [Sample] = []
    }

    /// `now`: seconds since the epoch, to turn the report's "in N seconds" into points in time.
    public static func render(_ report: StatusReport, now: Double) -> String {
        var families: [Family] = []
        func add(_ name: String, _ type: String, _ help: String, _ samples: [Sample]) {
            families.append(Family(name: "vpnexec_" + name, type: type, help: help, samples: samples))
        }
        /// A host-wide value: a family only where the report has it (root's view).
        func host(_ name: String, _ type: String, _ help: String, _ value: Double?) {
            if let value { add(name, type, help, [Sample(labels: [], value: value)]) }
        }
        add("build_info", "gauge", "1, with vpnd's version.", [Sample(labels: [("version", report.version)], value: 1)])
        if let reload = report.lastReload {
            add("last_reload_successful", "gauge", "1 if vpnd's last reload of its policy applied it (its start counts), 0 if it was refused or failed.",
                [Sample(labels: [], value: reload.outcome == ReloadStatus.applied ? 1 : 0)])
            add("last_reload_success_timestamp_seconds", "gauge", "When the policy in force was applied, in seconds since the epoch.",
                [Sample(labels: [], value: reload.lastApplied)])
        }
        let profiles = report.profiles
        func perProfile(_ value: (ProfileStatus) -> Double) -> [Sample] {
            profiles.map { Sample(labels: [("profile", $0.name)], value: value($0)) }
        }
        for (name, what, traffic) in [("sent", "sent by members", \ProfileStatus.sent), ("received", "received by members", \.received),
                                      ("tunneled", "of members that left through the tunnel", \.throughTunnel),
                                      ("killswitch_dropped", "of members dropped by the killswitch", \.droppedByKillswitch),
                                      ("direct", "of members sent direct to the LAN (allow_lan)", \.exceptions.direct)] {
            add("profile_\(name)_packets_total", "counter", "Packets \(what).", perProfile { Double($0[keyPath: traffic].packets) })
            add("profile_\(name)_bytes_total", "counter", "Bytes \(what).", perProfile { Double($0[keyPath: traffic].bytes) })
        }
        add("profile_members", "gauge", "Processes in the profile's cgroups.", perProfile { Double($0.members) })
        add("profile_killswitch", "gauge", "1 if the profile's killswitch is on.", perProfile { $0.killswitch ? 1 : 0 })
        add("profile_trusted_action", "gauge", "1 for the trusted-network action in force (connect, disconnect, block), 0 for the others; profiles with rules.",
            profiles.flatMap { p in p.trusted.map { t in ["connect", "disconnect", "block"].map { Sample(labels: [("profile", p.name), ("action", $0)], value: t.action == $0 ? 1 : 0) } } ?? [] })
        let tunnels = profiles.map { [("profile", $0.name), ("interface", $0.tunnel.interface)] }
        add("tunnel_up", "gauge", "1 if the profile's tunnel interface is up with a carrier.",
            zip(tunnels, profiles).map { Sample(labels: $0, value: $1.tunnel.state == "up" ? 1 : 0) })
        add("tunnel_receive_bytes_total", "counter", "Bytes the tunnel interface received.",
            zip(tunnels, profiles).map { Sample(labels: $0, value: Double($1.tunnel.rxBytes)) })
        add("tunnel_transmit_bytes_total", "counter", "Bytes the tunnel interface sent.",
            zip(tunnels, profiles).map { Sample(labels: $0, value: Double($1.tunnel.txBytes)) })
        add("tunnel_loop_dropped_packets_total", "counter", "Packets of the tunnel's own transport that would have entered it (a loop), dropped.",
            zip(tunnels, profiles).compactMap { labels, profile in profile.tunnel.transport.map { Sample(labels: labels, value: Double($0.loopDropped.packets)) } })

        // One sample per state, 1 for the current one: a graph or an alert selects the state it watches.
        let demands = zip(tunnels, profiles).compactMap { labels, profile in profile.tunnel.demand.map { (labels, $0) } }
        add("tunnel_demand_state", "gauge", "1 for the built-in tunnel's current state (on_demand, idle, vpnctl up/down), 0 for the others.",
            demands.flatMap { labels, demand in
                ["down-on-demand", "down-held", "connecting", "up"].map { Sample(labels: labels + [("state", $0)], value: demand.state == $0 ? 1 : 0) }
            })
        add("tunnel_demand_since_timestamp_seconds", "gauge", "When the built-in tunnel entered its current state, in seconds since the epoch.",
            demands.map { Sample(labels: $0.0, value: $0.1.since) })

        let engines = profiles.compactMap { profile in profile.tunnel.wireguard.map { (profile.name, $0) } }
        add("peer_latest_handshake_timestamp_seconds", "gauge", "When the built-in engine's latest handshake with the peer completed, in seconds since the epoch (peers with one).",
            engines.flatMap { profile, wg in
                wg.peers.compactMap { peer in peer.latestHandshake.map { Sample(labels: [("profile", profile), ("peer", peer.publicKey)], value: $0) } }
            })
        add("engine_dropped_packets_total", "counter", "Packets the built-in engine dropped, by reason.",
            engines.flatMap { profile, wg in
                wg.drops.sorted { $0.key < $1.key }.map { Sample(labels: [("profile", profile), ("reason", $0.key)], value: Double($0.value)) }
            })
        families += reconnectFamilies(engines, now: now)

        let proxies = profiles.compactMap { profile in profile.dns.map { (profile.name, $0) } }
        for (name, what, count) in [("answered", "answered to members", \DNSStatus.answered), ("forwarded", "forwarded to the profile's resolvers", \.forwarded),
                                    ("failed", "answered by the proxy itself with an error (SERVFAIL, REFUSED, FORMERR)", \.failed),
                                    ("dropped", "dropped by the proxy", \.dropped)] {
            add("dns_\(name)_total", "counter", "DNS queries \(what).",
                proxies.map { Sample(labels: [("profile", $0.0)], value: Double($0.1[keyPath: count])) })
        }
        add("dns_canary_answered_total", "counter", "Firefox's canary (use-application-dns.net) answered NXDOMAIN by the proxy.",
            proxies.map { Sample(labels: [("profile", $0.0)], value: Double($0.1.canaryAnswered)) })
        add("dns_encrypted_refused_total", "counter", "Members' connects and sends to port 853 (DNS over TLS/QUIC) refused.",
            proxies.filter { $0.1.encryptedDNS == DNSStatus.encryptedRefused }.map { Sample(labels: [("profile", $0.0)], value: Double($0.1.encryptedDNSRefused)) })
        add("dns_shared_addresses_total", "counter", "Addresses answered for a bypassed name and for another, kept in the tunnel.",
            proxies.map { Sample(labels: [("profile", $0.0)], value: Double($0.1.sharedAddresses)) })

        host("unknown_cgroup_refused_sockets_total", "counter", "Internet sockets refused in cgroups vpnd did not know yet where a profile cgroup could be.",
             report.unknownCgroupRefusals.map(Double.init))
        host("bypassed_packets_total", "counter", "Packets sent direct from vpn-bypass.slice.", report.bypassed.map { Double($0.packets) })
        host("bypass_moves_total", "counter", "Processes moved into vpn-bypass.slice (bypass.executables).", report.bypassMoves.map(Double.init))
        host("bypass_refused_total", "counter", "Processes that ran a bypass.executables program and stayed in their profile: their users may not bypass.",
             report.bypassRefused.map(Double.init))
        host("stale_mark_dropped_packets_total", "counter", "Packets with a mark of ours no profile holds, dropped.", report.droppedStaleMarks.map { Double($0.packets) })
        add("held_cgroups", "gauge", "Cgroups held because the kernel does not have their socket programs, or left by a removed profile.",
            [Sample(labels: [], value: Double(report.heldCgroups.count))])
        host("held_dropped_packets_total", "counter", "Packets of held cgroups dropped.", report.droppedHeld.map { Double($0.packets) })
        host("socket_programs_put_back_total", "counter", "Socket programs someone else detached, put back by vpnd.", report.socketProgramsPutBack.map(Double.init))
        host("learned_routes_put_back_total", "counter", "Learned routes (route.domains, bypass.domains) someone else deleted, put back by vpnd.",
             report.learnedRoutesPutBack.map(Double.init))
        host("control_refused_connections_total", "counter", "Control connections refused because their user held too many.", report.refusedConnections.map(Double.init))
        return families.map(text).joined()
    }

    /// The built-in engines' retries, per peer.
    static func reconnectFamilies(_ engines: [(String, WireGuardReport)], now: Double) -> [Family] {
        let peers = engines.flatMap { profile, wg in
            wg.reconnect.map { reconnect in reconnect.peers.map { (profile, reconnect.schedule, $0) } } ?? []
        }
        func labels(_ profile: String, _ peer: ReconnectPeerReport) -> [(String, String)] { [("profile", profile), ("peer", peer.publicKey)] }
        return [
            Family(name: "vpnexec_peer_handshake_attempts", type: "gauge", help: "Handshake initiations to the peer since the last completed handshake (or network change).",
                   samples: peers.map { Sample(labels: labels($0.0, $0.2), value: Double($0.2.attempts)) }),
            Family(name: "vpnexec_peer_next_handshake_timestamp_seconds", type: "gauge", help: "When the next handshake initiation to the peer is due, in seconds since the epoch (peers with one due).",
                   samples: peers.compactMap { p in p.2.nextTry.map { Sample(labels: labels(p.0, p.2), value: now + $0) } }),
            Family(name: "vpnexec_peer_handshake_error", type: "gauge", help: "1 with the last handshake error toward the peer (no-response, send-failed, cookie-required, storm-limit).",
                   samples: peers.compactMap { p in p.2.lastError.map { Sample(labels: labels(p.0, p.2) + [("error", $0)], value: 1) } }),
            Family(name: "vpnexec_peer_reconnect_schedule", type: "gauge", help: "1 with the kind of reconnection schedule in force for the peer (wireguard, backoff).",
                   samples: peers.map { Sample(labels: labels($0.0, $0.2) + [("schedule", $0.1.kind)], value: 1) }),
        ]
    }

    static func text(_ family: Family) -> String {
        var lines = ["# HELP \(family.name) \(family.help)", "# TYPE \(family.name) \(family.type)"]
        for sample in family.samples {
            let labels = sample.labels.isEmpty ? "" : "{" + sample.labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
            lines.append(family.name + labels + " " + number(sample.value))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Label values escape backslash, double quote and line feed.
    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Whole numbers without a fraction (counters up to 2^53 exactly).
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 9.0e15 ? String(Int64(value)) : String(value)
    }
}
