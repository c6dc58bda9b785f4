import DNS

/// A member's TCP connection to a proxy: the queries read so far, the replies not yet
/// written.
struct ClientConnection {
    var reader = DNSTCPReader()
    var outbox: [UInt8] = []
}
