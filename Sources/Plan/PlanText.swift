import HexDigits
import Nftables
import Routing
import SocketPrograms

/// The desired state as text: the nft table (valid `nft -f` input, replacing the table in
/// one transaction) followed by the rules, routes and sysctls as comments in iproute2's
/// and sysctl's notation.
public enum PlanText {
    public static func render(_ state: DesiredState, interfaceNames: [Int32: String] = [:]) -> String {
        var lines = ["# nftables: the whole table, replaced atomically"]
        lines.append(NftTextRenderer().render(state.nft))
        if let bridge = state.bridgeNft {
            lines.append("# nftables: the bridge family's table (routed containers' bridge ports)")
            lines.append(NftTextRenderer().render(bridge))
        }
        lines.append("# policy routing rules (proto \(vpnexecRouteProtocol) marks them as vpnexec's)")
        for rule in state.rules {
            var selector = rule.mask == 0 ? "" : " fwmark \(hex(rule.mark))/\(hex(rule.mask))"
            if let name = rule.inputInterface { selector += " iif \(name)" }
            if let uids = rule.uidRange { selector += " uidrange \(uids.lowerBound)-\(uids.upperBound)" }
            if let number = rule.ipProtocol { selector += " ipproto \(number)" }
            if let ports = rule.sourcePorts { selector += " sport \(ports.lowerBound)-\(ports.upperBound)" }
            if let ports = rule.destinationPorts { selector += " dport \(ports.lowerBound)-\(ports.upperBound)" }
            let what: String
            switch rule.action {
            case .lookup: what = "table \(rule.table)" + (rule.suppressPrefixLength.map { " suppress_prefixlength \($0)" } ?? "")
            case let .goto(target): what = "goto \(target)"
            case .nop: what = "nop"
            case .prohibit: what = "prohibit"
            }
            lines.append("# ip -\(rule.ipv4 ? 4 : 6) rule add priority \(rule.priority)\(selector) \(what) proto \(rule.protocolNumber)")
        }
        if !state.addresses.isEmpty {
            lines.append("# addresses (each profile's IPv6 DNS steering source)")
            lines += state.addresses.map { "# ip addr add \($0.prefix) dev \(interfaceNames[$0.interfaceIndex] ?? "#\($0.interfaceIndex)")" }
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
            case let .local(index, source): what = "local \(destination) dev \(interfaceNames[index] ?? "#\(index)") src \(source)"
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
        if !state.socketPrograms.isEmpty {
            lines.append("# socket programs (cgroup BPF: what a cgroup's sockets are born with and where their DNS goes)")
            lines += state.socketPrograms.map { "# \($0.cgroup.isEmpty ? "/" : $0.cgroup) (id \($0.id)): \(describe($0.settings))" }
        }
        if !state.learnedRoutes.isEmpty {
            lines.append("# routes from what the DNS proxies learn (proto \(vpnexecLearnedRouteProtocol)), as long as each address lives")
            lines += state.learnedRoutes.map { learned in
                let what: String
                switch learned.kind {
                case let .bypass(tunneled, _): what = "throw ADDRESS (unless in @\(tunneled) or the tunnel's destinations)"
                case let .tunnel(device, holds):
                    what = ([device.map { "ADDRESS dev \(interfaceNames[$0] ?? "#\($0)") metric 3" }, holds ? "unreachable ADDRESS metric 4" : nil].compactMap { $0 }.joined(separator: ", "))
                }
                return "# @\(learned.set) -> table \(learned.table): \(what.isEmpty ? "nothing while the tunnel is down" : what)"
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// "mark 0x1000000, packets without a profile's mark dropped, port 853 refused".
func describe(_ settings: SocketSettings) -> String {
    var parts: [String] = []
    if settings.mark != 0 { parts.append("mark \(hex(settings.mark))") }
    if settings.requireMark { parts.append("sockets without a mark of ours refused") }
    if settings.guardMarks != nil { parts.append("packets without a profile's mark dropped") }
    if settings.refuseEncryptedDNS { parts.append("port 853 refused" + (settings.unmarkedOnly ? " (unmarked sockets)" : "")) }
    if settings.guardPath { parts.append("sockets in cgroups unknown along the profile parent refused") }
    return parts.joined(separator: ", ")
}

extension String {
    func replacingSlashes() -> String { String(map { $0 == "/" ? "." : $0 }) }
}
