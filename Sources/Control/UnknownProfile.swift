import Suggestions

/// What a profile name no profile has is answered with, by vpnd (a launch, `vpnctl up`,
/// `down NAME`, `move`, `members -p`) and by `vpnctl desktop`, in the same words: the name
/// meant, else the names there are. The names are only those the caller may use (root's
/// are every profile), so a user learns nothing of profiles it may not use from a typo, as
/// its `vpnctl status` and `profiles` show it none.
public enum UnknownProfile {
    /// `unknown profile "wrok" (did you mean "work"?)`, `unknown profile "hom" (profiles
    /// you may use: work)`. `policyDirectory`, root's only, is named when it defines none.
    public static func message(_ name: String, among names: [String], everyProfile: Bool, policyDirectory: String? = nil) -> String {
        let head = "unknown profile \"\(name)\""
        if let nearest = Suggestion.closest(to: name.lowercased(), among: names.map { $0.lowercased() }),
           let meant = names.first(where: { $0.lowercased() == nearest }) {
            return head + " (did you mean \"\(meant)\"?)"
        }
        if names.isEmpty {
            guard everyProfile else { return head + " (you may use none)" }
            return head + " (" + (policyDirectory.map { "no profiles are defined in \($0)" } ?? "the policy defines none") + ")"
        }
        return head + " (\(everyProfile ? "profiles" : "profiles you may use"): \(names.joined(separator: ", ")))"
    }
}
