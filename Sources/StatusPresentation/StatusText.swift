import Control
import Glibc
import HexDigits

/// `vpnctl status` for people. What is held comes first (a `HELD:` line means something is
/// being blocked), then each profile: its tunnel, members, traffic and what the killswitch
/// held. What only says how vpnexec does its work (vpnd's pid and sandbox, the cgroups whose
/// sockets are born marked, DNS steering, marks and tables, the learned sets' sizes, the
/// tunnels' transports, programs and routes put back) is said only with `verbose`
/// (`vpnctl status --verbose`): a newcomer asked "is my app in the tunnel?", not how.
/// `--json` has every field either way.
public enum StatusText {
    public static func render(_ report: StatusReport, verbose: Bool = false, now: Double = Double(time(nil))) -> String {
        var lines: [String] = []
        if verbose {
            lines.append("vpnd pid \(report.daemonPID)" + (report.policyDirectory.map { ", policy \($0)" } ?? "") + (report.cgroupRoot.map { ", cgroup2 at \($0)" } ?? ""))
        }
        lines += held(report)
        if verbose {
            if let sandbox = report.sandbox { lines.append("sandbox: \(sandbox)") }
            lines.append("sockets born marked: \(birthMarks(report.birthMarks))")
        }
        // Steering that is off refuses every member's query: a warning, not an internal.
        if let steering = report.dnsSteering, verbose || steering.state != DNSSteeringStatus.routed {
            lines.append("DNS steering: \(dnsSteering(steering))")
        }
        // A profile whose names do not resolve: an error with the fix, not an internal.
        for profile in report.profiles {
            if let line = noResolvers(profile) { lines.append(line) }
        }
        if let system = report.systemProfile {
            lines.append("system mode: every process outside the profiles' cgroups and vpn-bypass.slice is in profile \(system)")
        }
        if report.profiles.isEmpty { lines.append("no profiles") }
        for profile in report.profiles {
            if !lines.isEmpty { lines.append("") }
            lines += self.profile(profile, routed: report.routedNamespaces.filter { $0.profile == profile.name },
                                  relayed: report.relayedNamespaces.filter { $0.profile == profile.name }, verbose: verbose, now: now)
        }
        lines += hostCounters(report, verbose: verbose)
        return lines.joined(separator: "\n") + "\n"
    }

    /// What is blocked because vpnd could not set it up: cgroups the kernel lacks programs
    /// of, a removed profile's processes, containers not routed.
    static func held(_ report: StatusReport) -> [String] {
        var lines: [String] = []
        for held in report.heldCgroups where held.missing.isEmpty {
            lines.append("HELD: \(held.cgroup): \(held.reason)")
        }
        for held in report.heldCgroups where !held.missing.isEmpty {
            lines.append("HELD: \(held.profile.map { "profile \($0), " } ?? "")\(held.cgroup): the kernel does not have its socket programs (\(held.missing.joined(separator: ", "))): \(held.reason); "
                         + "its traffic is dropped but on loopback\(report.droppedHeld.map { " (\(traffic($0)) so far)" } ?? "") and nothing is placed there")
        }
        for held in report.heldNamespaces {
            let who = held.pid.map { "pid \($0)" + (held.cgroup.map { " in \($0)" } ?? "") } ?? "no process of it left"
            let name = held.runtime.flatMap { runtime in held.name.map { "\(runtime) \($0), " } } ?? ""
            lines.append("HELD: \(held.profile.map { "profile \($0), " } ?? "")\(name)network namespace \(held.cookie) (\(who)): \(Plural.count(held.packets, "packet")) dropped; "
                         + "a member's socket in a network namespace of its own (a container) that is not routed into the tunnel"
                         + (held.reason.map { " (\($0))" } ?? "") + ", so what it sends outside its loopback is dropped")
        }
        return lines
    }

    /// A profile's containers, a row each (what names it, where it comes in, its addresses,
    /// what it sent and received), its forward.interfaces, and where their DNS goes.
    static func containers(_ profile: ProfileStatus, routed: [RoutedNamespaceReport], relayed: [RelayedNamespaceReport] = []) -> [String] {
        var lines: [String] = []
        for container in routed {
            let name = container.runtime.flatMap { runtime in container.name.map { "\(runtime) \($0), " } } ?? ""
            let bridges = container.bridges.isEmpty ? "" : " (on \(container.bridges.joined(separator: ", ")))"
            let addresses = (container.addresses ?? []).isEmpty ? "" : "; " + (container.addresses ?? []).joined(separator: ", ")
            let sent = container.sent.map { "; sent \(traffic($0))" } ?? "", received = container.received.map { ", received \(traffic($0))" } ?? ""
            let held = (container.heldPackets ?? 0) > 0 ? "; \(Plural.count(container.heldPackets ?? 0, "packet")) held before it was routed" : ""
            lines.append("  container \(name)network namespace \(container.cookie): routed from \(container.interfaces.joined(separator: ", "))\(bridges)\(addresses)\(sent)\(received)\(held)")
        }
        for container in relayed {
            let name = container.runtime.flatMap { runtime in container.name.map { "\(runtime) \($0), " } } ?? ""
            let addresses = (container.addresses ?? []).isEmpty ? "" : "; " + (container.addresses ?? []).joined(separator: ", ")
            lines.append("  container \(name)network namespace \(container.cookie): relayed: \(ExplainText.relayed(container.interfaces, container.relay))\(addresses)")
        }
        for forward in profile.forwardInterfaces ?? [] {
            switch forward.state {
            case ForwardInterfaceReport.missing:
                lines.append("  forward   \(forward.interface): missing (what arrives on it once it is there is the profile's)")
            case ForwardInterfaceReport.uplink:
                lines.append("  forward   \(forward.interface): REFUSED: it carries the host's default route (what arrives from the internet would go into the tunnel); list the VM's bridge or tap")
            default:
                let counts = [forward.received.map { "received \(traffic($0))" }, forward.sent.map { "sent \(traffic($0))" }].compactMap { $0 }
                lines.append("  forward   \(forward.interface): \(forward.state)" + (counts.isEmpty ? "" : "; " + counts.joined(separator: ", ")))
            }
        }
        if !lines.isEmpty {
            let dropped = profile.containerDNSDropped.map { ($0.packets > 0 ? "; \(traffic($0)) dropped" : "") } ?? ""
            lines.append("  their DNS to the profile's proxy, UDP and TCP\(dropped)")
        }
        return lines
    }

    /// One profile: its tunnel and how it connects, members, traffic, holes and DNS.
    static func profile(_ profile: ProfileStatus, routed: [RoutedNamespaceReport] = [], relayed: [RelayedNamespaceReport] = [], verbose: Bool, now: Double) -> [String] {
        let killswitch = "killswitch \(profile.killswitch ? "on" : "off")"
        var lines = ["profile \(profile.name): " + (verbose ? "mark \(hex(profile.mark)), table \(profile.table), " : "") + killswitch]
        let addresses = profile.tunnel.addresses.isEmpty ? "" : " (" + profile.tunnel.addresses.joined(separator: ", ") + ")"
        lines.append("  tunnel    \(profile.tunnel.interface): \(profile.tunnel.state)\(addresses), rx \(bytes(profile.tunnel.rxBytes)), tx \(bytes(profile.tunnel.txBytes))")
        if let demand = profile.tunnel.demand { lines.append(self.demand(demand, now: now)) }
        if verbose, let transport = profile.tunnel.transport { lines.append(self.transport(transport)) }
        if let trusted = profile.trusted { lines += self.trusted(trusted, now: now) }
        if let via = profile.via { lines.append(hop(via)) }
        if let servers = profile.tunnel.servers { lines.append(self.servers(servers)) }
        if let wg = profile.tunnel.wireguard { lines += wireguard(wg, verbose: verbose, now: now) }
        let cgroups = verbose ? " in " + ([profile.cgroup] + profile.joinedCgroups).joined(separator: ", ") : ""
        lines.append("  members   \(Plural.count(profile.members, "process", "processes"))\(cgroups)")
        lines += containers(profile, routed: routed, relayed: relayed)
        lines.append("  sent      \(traffic(profile.sent)); through the tunnel \(traffic(profile.throughTunnel))")
        lines.append("  received  \(traffic(profile.received))")
        lines.append("  dropped   \(traffic(profile.droppedByKillswitch)) by the killswitch")
        // What members get while the tunnel is not there, beside the count above (what the
        // hold device took is in it: HoldDevice). (An interface that is up without carrier
        // keeps its route: packets go into it and are lost, counted nowhere.)
        if profile.killswitch, profile.trusted?.action != "disconnect", ["down", "missing"].contains(profile.tunnel.state) {
            lines.append("  held      the tunnel is \(profile.tunnel.state): members' connections fail (\"No route to host\") and their datagrams are refused; nothing leaves")
        }
        lines += exceptions(profile.exceptions)
        if let dns = profile.dns { lines += self.dns(dns, verbose: verbose) }
        return lines
    }

    /// After the profiles: what went direct or was refused host-wide, and (verbose) what
    /// vpnd repaired.
    static func hostCounters(_ report: StatusReport, verbose: Bool) -> [String] {
        var lines: [String] = []
        let bypassMoves = report.bypassMoves ?? 0, bypassed = report.bypassed ?? .zero, bypassRefused = report.bypassRefused ?? 0
        if bypassMoves > 0 || bypassed.packets > 0 || bypassRefused > 0 {
            lines += ["", "bypass: \(Plural.count(bypassMoves, "process", "processes")) moved into vpn-bypass.slice, \(traffic(bypassed)) sent direct"]
            if bypassRefused > 0 {
                lines.append("  \(Plural.count(bypassRefused, "launch", "launches")) of bypass.executables left in their profile: their users may not bypass ([system] bypass.users, bypass.groups; vpnd's log names the rule)")
            }
        }
        if let rules = report.executableRules {
            lines += [""] + executableRules(rules)
        }
        if let stale = report.droppedStaleMarks, stale.packets > 0 {
            lines += ["", "stale marks: \(traffic(stale)) dropped (a mark of ours no profile holds: a removed profile's sockets, or one set by hand)"]
        }
        guard verbose else { return lines }
        if let refusals = report.unknownCgroupRefusals, refusals > 0 {
            lines += ["", "unknown cgroups: \(Plural.count(refusals, "socket")) refused (cgroups vpnd did not know yet where a profile cgroup could be)"]
        }
        if let putBack = report.socketProgramsPutBack, putBack > 0 {
            lines += ["", "socket programs: \(putBack) put back after someone else detached them (the log names them)"]
        }
        if let putBack = report.learnedRoutesPutBack, putBack > 0 {
            lines += ["", "learned routes: \(putBack) put back after someone else deleted them (the log names them)"]
        }
        if let refused = report.refusedConnections, refused > 0 {
            lines.append("control socket: \(Plural.count(refused, "connection")) refused (a user held too many at once)")
        }
        return lines
    }

    /// The built-in engine: its key and port, each peer, and (verbose) drops by reason.
    static func wireguard(_ wg: WireGuardReport, verbose: Bool, now: Double) -> [String] {
        var lines = ["  engine    built-in WireGuard, public key \(wg.publicKey ?? "(none)"), UDP port \(wg.listenPort.map(String.init) ?? "-")"]
        for peer in wg.peers {
            let handshake = peer.latestHandshake.map { "latest handshake \(Int(max(0, now - $0))) s ago" } ?? "no handshake yet"
            lines.append("  peer      \(peer.publicKey) at \(peer.endpoint ?? "(no endpoint)"): \(handshake), rx \(bytes(peer.rxBytes)), tx \(bytes(peer.txBytes))")
        }
        if verbose {
            let drops = wg.drops.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            lines.append("  drops     \(drops.isEmpty ? "none" : drops.joined(separator: ", "))")
        }
        if let reconnect = wg.reconnect { lines += Self.reconnect(reconnect) }
        return lines
    }

    /// The tunnel's own transport as vpnd knows it, and what its loop guard dropped.
    static func transport(_ t: TransportStatus) -> String {
        var text = "  transport "
        if let port = t.udpPort {
            let who = [t.source] + (t.pid.map { ["pid \($0)"] } ?? []) + (t.owner.map { ["uid \($0)"] } ?? [])
            text += "udp \(port) (\(who.joined(separator: ", "))): kept out of every profile"
        } else {
            text += (t.source == "unknown" ? "unknown" : "\(t.source), port not known") + (t.detail.map { " (\($0))" } ?? "")
        }
        if let mark = t.fwmark { text += "; fwmark \(mark)" }
        if !t.endpoints.isEmpty { text += "; peers at \(t.endpoints.joined(separator: ", "))" }
        let guarded = t.guardedUDPPorts.map { "udp \($0)" } + t.guardedTCPPorts.map { "tcp \($0)" }
        if !guarded.isEmpty { text += "; guarded \(guarded.joined(separator: ", ")) of pid \(t.pid.map(String.init) ?? "?"), which holds the device" }
        return text + "; loop: \(t.loopDropped.packets == 0 ? "none" : "\(traffic(t.loopDropped)) of its own transport dropped before entering it")"
    }

    /// The profile's holes, one line each, only those it has.
    static func exceptions(_ e: ExceptionStatus) -> [String] {
        var lines: [String] = []
        if e.allowLAN {
            lines.append("  lan       direct (private and link-local\(e.allowMulticast ? ", multicast" : "")): \(traffic(e.direct))")
        }
        if !e.routeNetworks.isEmpty { lines.append("  route     networks \(e.routeNetworks.joined(separator: ", "))") }
        if !e.routeExecutables.isEmpty {
            lines.append("  route     executables \(e.routeExecutables.joined(separator: ", ")); \(Plural.count(e.execMoves, "process", "processes")) moved in")
        }
        if !e.bypassExecutables.isEmpty { lines.append("  bypass    executables \(e.bypassExecutables.joined(separator: ", "))") }
        return lines
    }

    /// A domain list on one line: the first few, and how many there are when that is not all.
    static func domains(_ shown: [String], of count: Int) -> String {
        let first = shown.prefix(8).joined(separator: ", ")
        return count > 8 ? first + ", ... (\(count) in all)" : first
    }

    /// A profile whose proxy has no resolvers: members' names do not resolve; the fix.
    static func noResolvers(_ profile: ProfileStatus) -> String? {
        guard let d = profile.dns, d.failure == nil, d.servers.isEmpty else { return nil }
        return "error: profile \(profile.name) has no DNS resolvers, so its members' names do not resolve (their queries are refused): "
            + "set dns = [...] in [profile.\(profile.name)] or give the tunnel's wg-quick file a DNS = line"
    }

    /// Where the resolvers came from, when not from the profile's `dns`.
    static func resolversFrom(_ d: DNSStatus) -> String {
        guard let from = d.serversFrom, from != "dns", from != "none" else { return "" }
        if from == "systemd-resolved-dbus" { return " (from systemd-resolved over D-Bus, link \(d.serversLink.map(String.init) ?? "?"))" }
        let what = from == "wg-quick" ? "the tunnel's wg-quick file" : from
        return " (from \(what)\(d.serversFile.map { " \($0)" } ?? ""))"
    }

    /// The profile's DNS proxy: whom it asks, what it did; or why it does not run.
    static func dns(_ d: DNSStatus, verbose: Bool) -> [String] {
        if let failure = d.failure { return ["  dns       proxy not running: \(failure); members' queries are refused (none leaves)"] }
        let servers = d.servers.isEmpty ? "no resolvers: members' queries are refused (see the error above)" : "resolvers \(d.servers.joined(separator: ", "))\(resolversFrom(d))"
        var lines = ["  dns       proxy: \(servers); answered \(d.answered), forwarded \(d.forwarded), failed \(d.failed), dropped \(d.dropped)"]
        if !d.bypassDomains.isEmpty { lines.append("  bypass    domains " + domains(d.bypassDomains, of: d.bypassDomainCount)) }
        if !d.routeDomains.isEmpty { lines.append("  route     domains " + domains(d.routeDomains, of: d.routeDomainCount)) }
        if verbose, !d.setSizes.named.isEmpty {
            lines.append("  learned   " + d.setSizes.named.map { "\($0.0) \($0.1)" }.joined(separator: ", "))
        }
        lines += encryptedAndShared(d)
        lines += names(d)
        return lines
    }

    /// "1 packet, 64 B"; "0 packets" alone.
    static func traffic(_ t: Traffic) -> String {
        t.packets == 0 && t.bytes == 0 ? Plural.count(0, "packet") : "\(Plural.count(t.packets, "packet")), \(bytes(t.bytes))"
    }

    static func bytes(_ count: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(count) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
