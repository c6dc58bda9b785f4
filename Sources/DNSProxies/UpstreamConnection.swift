import DNS

/// A proxy's TCP connection to a server for one query: sent once connected, closed with
/// its answer.
struct UpstreamConnection {
    var server: DNSServer
    var query: [UInt8]
    var reader = DNSTCPReader()
    var connected = false
}
