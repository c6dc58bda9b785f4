/// A built-in tunnel with several servers (`tunnel.wireguard` as a list): which one is in
/// use, how it was chosen and why.
public struct ServerChoiceStatus: Codable, Hashable, Sendable {
    /// "failover" or "fastest".
    public var mode: String
    /// The servers, in the policy's order: each one's file, or `FILE (Endpoint HOST:PORT)`
    /// for each Endpoint of a file whose [Peer] lists several.
    public var files: [String]
    /// The server in use now, named as in `files`.
    public var current: String
    /// "up" (a handshake completed) or "trying" (waiting for one, members held).
    public var state: String
    /// Why this server: "first in order", "server 1 completed no handshake within 15 s",
    /// "fastest: handshake in 12 ms (server 2 310 ms)".
    public var reason: String
    /// Each server's measured handshake round trip in milliseconds (fastest; nil: not
    /// measured or no answer).
    public var roundTripsMs: [Int?]

    public init(mode: String, files: [String], current: String, state: String, reason: String, roundTripsMs: [Int?]) {
        self.mode = mode
        self.files = files
        self.current = current
        self.state = state
        self.reason = reason
        self.roundTripsMs = roundTripsMs
    }
}
