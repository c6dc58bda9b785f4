/// Multihop (`tunnel.via`): the profile whose tunnel carries this profile's encrypted
/// transport, whether that tunnel is up (while it is down the transport is held), and how
/// much of the transport went into it.
public struct HopStatus: Codable, Hashable, Sendable {
    /// The entry profile and its tunnel interface.
    public var entry: String
    public var entryInterface: String
    /// The entry tunnel's state, as `tunnel.state` says it ("up", "down", "missing").
    public var entryState: String
    /// Packets of this profile's transport counted in the entry's egress chain (its socket
    /// carries the entry's mark, so they go by the entry's table into its tunnel).
    public var carried: Traffic

    public init(entry: String, entryInterface: String, entryState: String, carried: Traffic) {
        self.entry = entry
        self.entryInterface = entryInterface
        self.entryState = entryState
        self.carried = carried
    }
}
