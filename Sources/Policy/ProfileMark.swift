/// A profile's packet mark: its index shifted under the mark mask ([routing] mark_mask).
/// Members' sockets, packets and connections carry it, its `ip rule` sends them to the
/// profile's table, and every other place (nft rules and sets, socket marks, vpnd's DNS
/// queries, status) reads it from the profile rather than deriving it again.
public struct ProfileMark: Hashable, Sendable {
    /// The bits as the kernel sees them (`meta mark`, SO_MARK, `ip rule fwmark`).
    public var value: UInt32

    public init(_ value: UInt32) { self.value = value }
}

extension Policy {
    /// Each profile's mark from its index and the routing settings. The policy sets it
    /// whenever its profiles or its routing change, so that it never disagrees with the
    /// mark mask in force.
    static func marked(_ profiles: [Profile], routing: RoutingSettings) -> [Profile] {
        profiles.map { profile in
            var profile = profile
            profile.mark = ProfileMark(routing.mark(forIndex: profile.index))
            return profile
        }
    }
}
