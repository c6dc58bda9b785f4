import Policy

/// Multihop through an on-demand entry. The exit's transport is routed into the entry's TUN,
/// so an exit coming up brings its entry up by the packet trigger (the entry's first packet
/// for a peer). What that alone misses is idle: an exit whose session is up but quiet (no
/// keepalive, members silent) sends nothing into the entry, which would go down under it and
/// make the exit's next packet wait for two handshakes. So while an exit's tunnel runs
/// (connecting or up, always-up or on demand) its entry counts as having a member, and
/// idles only after the exit has gone down.
public enum MultihopDemand {
    /// Whether a built-in tunnel whose transport goes through `entry` runs now.
    public static func exitRuns(through entry: Profile, in policy: Policy, running: (String) -> Bool) -> Bool {
        policy.profiles.contains { $0.via?.entry == entry.name && $0.tunnel.isBuiltIn && running($0.tunnel.interfaceName) }
    }

    /// The profiles, exits before their entries (by the length of their chain of via), so
    /// that an exit brought up by its members makes its entry's count the same second.
    public static func exitsFirst(_ policy: Policy) -> [Profile] {
        func depth(_ profile: Profile) -> Int {
            var seen: Set<String> = [profile.name], next = profile.via.flatMap { policy.profile(named: $0.entry) }
            while let hop = next, seen.insert(hop.name).inserted { next = hop.via.flatMap { policy.profile(named: $0.entry) } }
            return seen.count
        }
        return policy.profiles.enumerated().sorted { (depth($0.element), -$0.offset) > (depth($1.element), -$1.offset) }.map(\.element)
    }
}
