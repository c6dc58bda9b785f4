import Control

/// `vpnctl status` for people.
enum StatusText {
    static func render(_ report: StatusReport) -> String {
        var lines = ["vpnd pid \(report.daemonPID), policy \(report.policyDirectory), cgroup2 at \(report.cgroupRoot)"]
        if report.profiles.isEmpty { lines.append("no profiles") }
        for profile in report.profiles {
            lines.append("")
            lines.append("profile \(profile.name): mark 0x\(String(profile.mark, radix: 16)), table \(profile.table), killswitch \(profile.killswitch ? "on" : "off")")
            let addresses = profile.tunnel.addresses.isEmpty ? "" : " (" + profile.tunnel.addresses.joined(separator: ", ") + ")"
            lines.append("  tunnel    \(profile.tunnel.interface): \(profile.tunnel.state)\(addresses), rx \(bytes(profile.tunnel.rxBytes)), tx \(bytes(profile.tunnel.txBytes))")
            lines.append("  members   \(profile.members) process(es) in \(profile.cgroup)")
            lines.append("  sent      \(traffic(profile.sent)); through the tunnel \(traffic(profile.throughTunnel))")
            lines.append("  received  \(traffic(profile.received))")
            lines.append("  dropped   \(traffic(profile.droppedByKillswitch)) by the killswitch")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func traffic(_ t: Traffic) -> String { "\(t.packets) packets, \(bytes(t.bytes))" }

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
