import Control

/// `vpnctl members`' second table: a row per network namespace of the profiles (a
/// container, routed, relayed or held) and per forward.interfaces entry (a VM's bridge or tap), in
/// the profiles' order. Empty: there are none, and the table is not printed.
public enum ContainerRows {
    public static let header = ["NAMESPACE", "PROFILE", "CONTAINER", "STATE", "INTERFACES", "ADDRESSES", "TRAFFIC"]

    public static func rows(profiles: [String], routed: [RoutedNamespaceReport], relayed: [RelayedNamespaceReport] = [], held: [HeldNamespaceReport],
                            forward: [String: [ForwardInterfaceReport]]) -> [[String]] {
        var rows: [[String]] = []
        for profile in profiles {
            rows += routed.filter { $0.profile == profile }.map(row)
            rows += relayed.filter { $0.profile == profile }.map(row)
            rows += held.filter { $0.profile == profile }.map(row)
            rows += (forward[profile] ?? []).map { row($0, profile: profile) }
        }
        return rows
    }

    static func row(_ container: RoutedNamespaceReport) -> [String] {
        let bridges = container.bridges.isEmpty ? "" : " on " + container.bridges.joined(separator: ",")
        let sent = StatusText.bytes(container.sent?.bytes ?? 0), received = StatusText.bytes(container.received?.bytes ?? 0)
        return [String(container.cookie), container.profile, name(container.runtime, container.name), "routed",
                container.interfaces.joined(separator: ",") + bridges, list(container.addresses), "sent \(sent), received \(received)"]
    }

    /// Its traffic is its relay's, counted nowhere of ours: the column says who relays it.
    static func row(_ container: RelayedNamespaceReport) -> [String] {
        let relay = container.relay.map { relay in
            "by pid \(relay.pid) (\(relay.program)" + (relay.match == RelayProcessReport.alone ? ", the only relay it can be" : "") + "), "
                + (relay.profile.map { "in profile \($0)" } ?? "in NO profile: outside every tunnel")
        } ?? "by a process vpnd cannot name"
        return [String(container.cookie), container.profile, name(container.runtime, container.name), "relayed",
                container.interfaces.joined(separator: ","), list(container.addresses), relay]
    }

    static func row(_ container: HeldNamespaceReport) -> [String] {
        let dropped = "\(Plural.count(container.packets, "packet")) dropped" + (container.reason.map { ": \($0)" } ?? "")
        return [String(container.cookie), container.profile ?? "-", name(container.runtime, container.name), "held", "-", list(container.addresses), dropped]
    }

    static func row(_ interface: ForwardInterfaceReport, profile: String) -> [String] {
        var traffic = "-"
        if let received = interface.received {
            traffic = "received \(StatusText.bytes(received.bytes)), sent \(StatusText.bytes(interface.sent?.bytes ?? 0))"
        }
        return ["-", profile, "forward.interfaces", interface.state, interface.interface, "-", traffic]
    }

    static func name(_ runtime: String?, _ name: String?) -> String {
        guard let runtime, let name else { return "-" }
        return "\(runtime) \(name)"
    }

    static func list(_ addresses: [String]?) -> String {
        guard let addresses, !addresses.isEmpty else { return "-" }
        return addresses.joined(separator: ",")
    }
}
