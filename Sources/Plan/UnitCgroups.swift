import Policy

/// Cgroups systemd makes that join a profile where they stand, by their name: nothing is
/// moved (systemd's accounting, limits and `systemctl status` stay right), the cgroup's id
/// becomes a member of the profile in the kernel's maps.
/// - A user's own slice named after a profile, `user.slice/user-UID.slice/user@UID.service/
///   .../vpn-NAME.slice` (user units with `Slice=vpn-NAME.slice`), if that user may use the
///   profile.
/// - A desktop application's scope or service, named by systemd's desktop convention
///   `app[-LAUNCHER]-APPID-RANDOM.scope` / `app[-LAUNCHER]-APPID[@RANDOM].service` (GNOME,
///   KDE and flatpak start every app so), whose APPID a profile lists in `apps`, if its user
///   (the manager it runs under; root for the system manager) may use the profile.
public enum UnitCgroups {
    public enum Decision: Equatable, Sendable {
        case member(profile: String)
        /// Named like a profile's but its user may not use it: logged, not joined.
        case refused(profile: String, uid: UInt32, rule: String)
    }

    /// Where systemd puts the cgroups that join: `system.slice/app-….scope` (the system
    /// manager's units) at 2, and at 5 a user manager's `user.slice/user-UID.slice/
    /// user@UID.service/app.slice/app-….scope` and `…/user@UID.service/vpn.slice/vpn-NAME.slice`.
    /// A unit elsewhere (a user's own nested slice) still joins, with a map of its own.
    public static let usualLevels: [UInt32] = [2, 5]

    /// Who may use a profile: the uid's groups come from the caller (the user database).
    public typealias Groups = (UInt32) -> [UInt32]

    /// nil: the cgroup is nothing of ours (most are not).
    public static func decide(_ path: String, policy: Policy, parent: String, groups: Groups) -> Decision? {
        let components = path.split(separator: "/").map(String.init)
        guard let last = components.last else { return nil }
        // Under the profile parent the profile cgroups decide already.
        if !parent.isEmpty, path == parent || path.hasPrefix(parent + "/") { return nil }
        let manager = managerUID(components)
        let uid = manager ?? 0
        let profile: Profile?
        if last.hasPrefix("vpn-"), last.hasSuffix(".slice"), manager != nil {
            profile = policy.profile(named: String(last.dropFirst(4).dropLast(6)))
        } else if let app = appID(ofUnit: last) {
            profile = policy.profiles.first { $0.apps.contains(app) }
        } else {
            return nil
        }
        guard let profile else { return nil }
        guard profile.access.allows(uid: uid, groups: groups(uid)) else {
            return .refused(profile: profile.name, uid: uid, rule: "the rule at \(profile.access.location) allows \(profile.access.summary)")
        }
        return .member(profile: profile.name)
    }

    /// Whether a cgroup's name could join a profile (what to look at closer).
    public static func isCandidate(_ name: String) -> Bool {
        (name.hasPrefix("vpn-") && name.hasSuffix(".slice")) || appID(ofUnit: name) != nil
    }

    /// The uid of the user manager a cgroup is under (`user@UID.service`), if any.
    static func managerUID(_ components: [String]) -> UInt32? {
        for component in components where component.hasPrefix("user@") && component.hasSuffix(".service") {
            return UInt32(component.dropFirst(5).dropLast(8))
        }
        return nil
    }

    /// The application id in a unit name that follows systemd's desktop convention, with
    /// `\x2d` unescaped (a dash inside the id): `app-gnome-org.mozilla.firefox-4242.scope`
    /// -> org.mozilla.firefox.
    public static func appID(ofUnit unit: String) -> String? {
        var name: Substring
        let isScope: Bool
        if unit.hasSuffix(".scope") { name = unit.dropLast(6); isScope = true } else if unit.hasSuffix(".service") { name = unit.dropLast(8); isScope = false } else { return nil }
        guard name.hasPrefix("app-") else { return nil }
        name = name.dropFirst(4)
        if !isScope, let at = name.firstIndex(of: "@") { name = name[..<at] }
        var parts = name.split(separator: "-", omittingEmptySubsequences: false)
        // A scope ends in a random part; it has an id before it, and maybe a launcher.
        if isScope {
            guard parts.count >= 2 else { return nil }
            parts.removeLast()
        }
        guard (1...2).contains(parts.count), let id = parts.last, !id.isEmpty else { return nil }
        return id.split(separator: "\\x2d", omittingEmptySubsequences: false).joined(separator: "-")
    }
}
