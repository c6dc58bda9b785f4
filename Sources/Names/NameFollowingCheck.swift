/// `vpnctl check` on a kernel that cannot follow names (before 6.7): what on this host would
/// take members' lookups outside their profiles, and the fix. Pure: the caller reads
/// nsswitch.conf and looks for nscd's socket.
public enum NameFollowingCheck {
    /// The sources of the first `hosts:` line (actions in brackets left out), in order.
    public static func hostsSources(_ nsswitch: String) -> [String] {
        for line in nsswitch.split(separator: "\n") {
            let text = line.prefix { $0 != "#" }
            guard let colon = text.firstIndex(of: ":"), text[..<colon].filter({ $0 != " " && $0 != "\t" }) == "hosts" else { continue }
            var sources: [String] = []
            var inAction = false
            var word = ""
            for character in text[text.index(after: colon)...] + " " {
                switch character {
                case "[": inAction = true
                case "]": inAction = false
                case " ", "\t":
                    if !word.isEmpty { sources.append(word) }
                    word = ""
                default: if !inAction { word.append(character) }
                }
            }
            return sources
        }
        return []
    }

    /// Nothing where the kernel follows names; else a warning for `resolve` on the hosts
    /// line and one for a running nscd.
    public static func warnings(followed: Bool, nsswitch: String?, nscdRunning: Bool) -> [String] {
        guard !followed else { return [] }
        var lines: [String] = []
        if let nsswitch, hostsSources(nsswitch).contains("resolve") {
            lines.append("warning: /etc/nsswitch.conf's hosts line names resolve: members' getaddrinfo() asks systemd-resolved, which answers outside "
                + "their profiles, as this kernel cannot send those lookups to them (Linux 6.7 or later can); take resolve off the line (hosts: files dns)")
        }
        if nscdRunning {
            lines.append("warning: nscd runs: members' lookups through it are answered outside their profiles, as this kernel cannot refuse it to them "
                + "(Linux 6.7 or later can); stop nscd or turn its hosts cache off (enable-cache hosts no)")
        }
        return lines
    }
}

