import DNS

/// Where a resolver's decisions leave it: its sockets (ProfileResolver), or a test's record
/// of what would have been sent.
protocol ResolverEdge: AnyObject {
    /// A round's forwards over UDP, sent together; returns the queries the kernel refused at
    /// once (no route while the tunnel is down).
    func sendForwards(_ forwards: [(query: [UInt8], server: DNSServer)]) -> [[UInt8]]
    /// A query to `server` over a connection of its own; false when refused at once.
    func forwardOverTCP(_ query: [UInt8], to server: DNSServer) -> Bool
    /// A round's replies, once the addresses they carry are in their sets. An empty reply
    /// is none (a local lookup's waiter hears nil).
    func deliver(_ replies: [(response: [UInt8], client: DNSClient)])
}
