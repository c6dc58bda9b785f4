import HexDigits
import Nftables
import Routing

/// The desired state as text: the nft table (valid `nft -f` input, replacing the table in
/// one transaction) followed by the rules, routes and sysctls as comments in iproute2's
/// and sysctl's notation.
public enum PlanText {
    public static func render(_ state: DesiredState, interfaceNames: [Int32: String] = [:]) -> String {
        var lines = ["# nftables: the whole table, replaced atomically"]
        lines.append(NftTextRenderer().render(state.nft))
        lines.append("# policy routing rules (proto \(vpnexecRouteProtocol) marks them as vpnexec's)")
        for rule in state.rules {
            let selector = rule.mask == 0 ? "" : " fwmark \(hex(rule.mark))/\(hex(rule.mask))"
            let what: String
            switch rule.action {
            case .lookup: what = "table \(rule.table)"
            case let .goto(target): what = "goto \(target)"
            case .nop: what = "nop"
            }
            lines.append("# ip -\(rule.ipv4 ? 4 : 6) rule add priority \(rule.priority)\(selector) \(what) proto \(rule.protocolNumber)")
        }
        lines.append("# routes")
        for route in state.routes {
            let family = route.destination.isIPv4 ? 4 : 6
            let destination = route.destination.length == 0 ? "default" : route.destination.description
            let what: String
            switch route.kind {
            case let .device(index): what = "\(destination) dev \(interfaceNames[index] ?? "#\(index)")"
            case .unreachable: what = "unreachable \(destination)"
            case .blackhole: what = "blackhole \(destination)"
            case .fallThrough: what = "throw \(destination)"
            }
            lines.append("# ip -\(family) route add \(what) table \(route.table) metric \(route.metric) proto \(route.protocolNumber)")
        }
        if !state.sysctls.isEmpty {
            lines.append("# sysctls")
            lines += state.sysctls.map { "# \($0.path.replacingSlashes()) = \($0.value)" }
        }
        if !state.cgroups.isEmpty {
            lines.append("# profile cgroups (relative to the cgroup2 mount)")
            lines += state.cgroups.map { "# \($0)" }
        }
        if !state.socketMarks.isEmpty {
            lines.append("# sockets born marked (cgroup socket program at inet_sock_create)")
            lines += state.socketMarks.map { "# \($0.cgroup) (id \($0.id)): mark \(hex($0.mark))" }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    func replacingSlashes() -> String { String(map { $0 == "/" ? "." : $0 }) }
}
