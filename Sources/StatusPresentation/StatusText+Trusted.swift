import Control

extension StatusText {
    /// A profile's trusted networks: the action in force since when, the rule and the values
    /// that chose it, and what the host's networks looked like.
    static func trusted(_ t: TrustedStatus, now: Double) -> [String] {
        let seconds = max(0, Int(now - t.since))
        let fields = t.matched.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
        let held = t.heldBy.map { "profile \($0), which carries this tunnel's transport (tunnel.via), \(t.heldByAction ?? "block")s: held so that this tunnel's server never sees the host's address" }
        let why = held ?? t.rule.map { "rule \($0) of \(t.rules)" + (t.ruleLocation.map { " (\($0))" } ?? "") + " matched " + fields }
            ?? "no rule of \(t.rules) matched"
        let effect = switch t.action {
        case "disconnect": " (members go direct)"
        case "block": " (members held)"
        default: ""
        }
        let n = t.network
        let route = n.interface.map { "default route \($0)" + (n.gateway.map { " via \($0)" } ?? "") + " (" + (n.gatewayMAC ?? "gateway MAC unknown") + ")" }
            ?? "no default route"
        return ["  trusted   \(t.action)\(effect) for \(seconds) s: \(why)",
                "  network   \(route)" + (n.ssid.map { ", SSID \"\($0)\"" } ?? "")
                    + (n.searchDomains.isEmpty ? "" : ", search \(n.searchDomains.joined(separator: " "))")]
    }
}
