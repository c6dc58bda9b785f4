import Control

/// A built-in tunnel's demand line: up, connecting or down, since when, why, and what
/// keeps it there (`vpnctl up/down`, the idle countdown).
extension StatusText {
    static func demand(_ d: TunnelDemandStatus, now: Double) -> String {
        let words = Self.demandWords[d.state] ?? d.state
        var text = "  demand    \(words) since \(age(now - d.since)) ago (\(d.reason))"
        if let held = d.held {
            text += "; held \(held) by vpnctl until `vpnctl \(held == "up" ? "down" : "up")` or a reload"
        } else if let left = d.idleLeft {
            text += "; down when idle in \(age(left))"
        } else if d.onDemand, let idle = d.idleSeconds, d.state == "up" || d.state == "connecting" {
            text += "; down after \(age(idle)) with no members and no traffic"
        } else if d.onDemand, d.state == "down-on-demand" {
            text += "; up at the first member or packet"
        }
        return text
    }

    /// The words for each state's token (JSON's): what vpnd's log says too.
    static let demandWords = ["down-on-demand": "down (on demand)", "down-held": "down (vpnctl down)"]

    /// "42 s", "5 min 3 s", "2 h 10 min".
    static func age(_ seconds: Double) -> String {
        let s = Int(max(0, seconds.rounded()))
        if s < 60 { return "\(s) s" }
        if s < 3600 { return s % 60 == 0 ? "\(s / 60) min" : "\(s / 60) min \(s % 60) s" }
        return "\(s / 3600) h \(s % 3600 / 60) min"
    }
}
