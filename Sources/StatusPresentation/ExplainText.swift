import Control

/// `vpnctl explain` for people: the first line says where its traffic and its names go and
/// whether the killswitch holds it, as a user asks ("is it in the tunnel?"); what decided
/// that (cgroup, rule, mark, exceptions, namespace) follows. `--json` has every field.
public enum ExplainText {
    public static func render(_ explanation: Explanation) -> String {
        var lines = [headline(explanation)]
        for route in explanation.routes { lines.append("  \(route.family == "ipv4" ? "IPv4" : "IPv6"): \(path(route, explanation))") }
        lines.append("  DNS: \(dns(explanation.dns, profile: explanation.profile))")
        lines.append("  names (nss-resolve): " + (explanation.dns.namesSocket.map { "answered by the profile on \($0)" }
            ?? "not followed: \(explanation.dns.namesNotFollowed ?? "unknown")"))
        if let killswitch = explanation.killswitch { lines.append("  killswitch: \(self.killswitch(killswitch, interface: explanation.tunnel?.interface))") }
        if explanation.held {
            lines.append("  HELD: the kernel does not have the socket programs of \(explanation.markFrom ?? explanation.cgroup): its traffic is dropped but on loopback")
        }
        lines.append("cgroup: " + (explanation.cgroup.isEmpty ? "/ (the root cgroup)" : explanation.cgroup))
        lines.append("placed by: \(explanation.rule)")
        lines.append("sockets' mark: " + (explanation.mark.map { "\($0) (the socket programs of \(explanation.markFrom.map { $0.isEmpty ? "/" : $0 } ?? "?"))" }
            ?? "none (routed as the host's)"))
        if let exceptions = explanation.exceptions { lines.append("exceptions: \(self.exceptions(exceptions))") }
        if let namespace = explanation.namespace { lines.append("network namespace: \(self.namespace(namespace, profile: explanation.profile))") }
        if let probe = explanation.probe { lines.append("probe: \(self.probe(probe, interface: explanation.tunnel?.interface))") }
        return lines.joined(separator: "\n") + "\n"
    }

    static func probe(_ probe: ExplainedProbe, interface: String?) -> String {
        guard let local = probe.localAddress else { return "no connect to \(probe.target): \(probe.error ?? "unknown")" }
        let outcome = probe.connected ? "connected" : "did not connect (\(probe.error ?? "unknown"))"
        let whose = probe.tunnelAddress ? "the tunnel's address (\(interface ?? "?"))" : "NOT the tunnel's address"
        return "a process in the profile \(outcome) to \(probe.target) from \(local): \(whose)"
    }

    static func headline(_ explanation: Explanation) -> String {
        let who = explanation.pid.map { pid in "pid \(pid)" + (explanation.command.map { " (\(short($0)))" } ?? "") }
            ?? "a process launched with vpnexec -p \(explanation.profile ?? "?")"
        let place: String
        switch explanation.placement {
        case Explanation.profileCgroup, Explanation.joined: place = "is in profile \(explanation.profile ?? "?")"
        case Explanation.system: place = "is in profile \(explanation.profile ?? "?") (system mode)"
        case Explanation.bypass: place = "is bypassed (outside every profile)"
        default: place = "is in no profile"
        }
        var parts = ["\(who) \(place)"]
        if let v4 = explanation.routes.first(where: { $0.family == "ipv4" }) { parts.append("IPv4 " + brief(v4)) }
        if let v6 = explanation.routes.first(where: { $0.family == "ipv6" }) { parts.append("IPv6 " + brief(v6)) }
        if explanation.dns.port53 == ExplainedDNS.proxy {
            parts.append("DNS via the profile's proxy" + (explanation.dns.servers.isEmpty ? "" : " to \(explanation.dns.servers.joined(separator: ", "))"))
        } else if explanation.dns.port53 == ExplainedDNS.refused {
            parts.append("DNS refused")
        }
        if let relay = explanation.namespace?.relay, explanation.namespace?.state == ExplainedNamespace.relayed, relay.profile != explanation.profile {
            parts.append("but its namespace's relay, pid \(relay.pid) (\(relay.program)), is in " + (relay.profile.map { "profile \($0)" } ?? "NO profile") + ": its traffic leaves as that one's")
        }
        if let killswitch = explanation.killswitch {
            parts.append(killswitch.holding ? "killswitch HOLDING it (tunnel \(killswitch.tunnelState))" : "killswitch \(killswitch.enabled ? "on" : "off")")
        }
        return parts.joined(separator: "; ")
    }

    static func brief(_ route: ExplainedRoute) -> String {
        guard let interface = route.interface else { return "has no route" }
        return (route.throughTunnel ? "goes through tunnel \(interface)" : "goes direct via \(interface)") + (route.source.map { " from \($0)" } ?? "")
    }

    static func path(_ route: ExplainedRoute, _ explanation: Explanation) -> String {
        guard let interface = route.interface else {
            return "no route to \(route.destination)" + (explanation.killswitch?.enabled == true ? " (the killswitch holds it)" : "")
        }
        return (route.throughTunnel ? "through tunnel \(interface)" : "direct via \(interface)") + (route.source.map { " from \($0)" } ?? "")
            + (route.gateway.map { ", gateway \($0)" } ?? "") + " (route to \(route.destination))"
    }

    static func dns(_ dns: ExplainedDNS, profile: String?) -> String {
        switch dns.port53 {
        case ExplainedDNS.proxy:
            return "port-53 queries answered by profile \(profile ?? "?")'s proxy, asking "
                + (dns.servers.isEmpty ? "no server" : dns.servers.joined(separator: ", ")) + (dns.serversFrom.map { " (from \($0))" } ?? "")
                + " through the tunnel"
        case ExplainedDNS.refused:
            return "port-53 queries refused: \(dns.failure ?? "the profile's proxy does not run")"
        default:
            return "the host's resolver (not vpnd's)"
        }
    }

    static func killswitch(_ killswitch: ExplainedKillswitch, interface: String?) -> String {
        let tunnel = "tunnel \(interface ?? "?") \(killswitch.tunnelState)"
        guard killswitch.enabled else { return "off (\(tunnel)): without the tunnel its traffic would leave direct" }
        return killswitch.holding ? "on, HOLDING its traffic: \(tunnel)" : "on (\(tunnel))"
    }

    static func exceptions(_ exceptions: ExplainedExceptions) -> String {
        "allow_lan \(exceptions.allowLAN ? "on" : "off"), " + [
            Plural.count(exceptions.routeNetworks, "route network"), Plural.count(exceptions.bypassDomains, "bypass domain"),
            Plural.count(exceptions.routeDomains, "route domain"), Plural.count(exceptions.bypassExecutables, "bypass executable"),
            Plural.count(exceptions.routeExecutables, "route executable"),
        ].joined(separator: ", ")
    }

    static func namespace(_ namespace: ExplainedNamespace, profile: String? = nil) -> String {
        switch namespace.state {
        case ExplainedNamespace.routed:
            return "a container's, routed into the tunnel by \(namespace.interfaces.joined(separator: ", "))"
                + (namespace.namespaceID.map { " (id \($0))" } ?? "") + "; the routes above are vpnd's namespace's"
        case ExplainedNamespace.relayed:
            return "a container's, relayed: " + relayed(namespace.interfaces, namespace.relay) + (namespace.namespaceID.map { " (id \($0))" } ?? "")
                + (namespace.relay.map { $0.profile != profile } ?? false
                    ? "; the routes above are this profile's in vpnd's namespace, not the relay's" : "; the routes above are vpnd's namespace's, which the relay's sockets take")
        case ExplainedNamespace.held:
            return "a container's, HELD: what it sends outside its loopback is dropped" + (namespace.reason.map { " (\($0))" } ?? "")
        default:
            return "not vpnd's" + (namespace.reason.map { " (\($0))" } ?? "") + (namespace.namespaceID.map { ", id \($0) in vpnd's" } ?? "")
                + ": neither routed, relayed nor held as vpnd numbers it; the routes above are vpnd's namespace's, not its own"
        }
    }

    /// Who carries a relayed namespace's traffic, and as whose: what it sends to its devices
    /// reaches only the process reading them, which sends it on with sockets of its own.
    public static func relayed(_ interfaces: [String], _ relay: RelayProcessReport?) -> String {
        let devices = interfaces.joined(separator: ", ")
        guard let relay else {
            return "what it sends to its \(devices) is read by a process vpnd cannot name (slirp4netns, pasta: none names this namespace on its command line) "
                + "and leaves as that process's own connections, through the tunnel when that process is in the profile"
        }
        let reader = "pid \(relay.pid) (\(relay.program))" + (relay.match == RelayProcessReport.alone ? ", the only relay it can be," : "") + " reads its \(devices)"
        guard let profile = relay.profile else {
            return reader + ", in NO profile: what it relays leaves as that process's own connections, outside every tunnel"
        }
        return reader + ", in profile \(profile): its sockets are that profile's member's, through its tunnel and held by its killswitch"
    }

    /// A command line cut to what fits the first line.
    static func short(_ command: String) -> String {
        command.count <= 40 ? command : String(command.prefix(39)) + "…"
    }
}
