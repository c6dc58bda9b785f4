import Addresses

public enum DNSTransport: Hashable, Sendable {
    case udp
    case tcp
}

/// An address the proxy wants in an nft set, for `timeoutSeconds`.
public struct DNSSetElement: Hashable, Sendable {
    public var set: String
    public var address: IPAddress
    public var timeoutSeconds: UInt32

    public init(set: String, address: IPAddress, timeoutSeconds: UInt32) {
        self.set = set
        self.address = address
        self.timeoutSeconds = timeoutSeconds
    }
}

/// What the caller does for the proxy. Actions from one call are independent of each other.
public enum DNSProxyAction<Client: Hashable>: CustomStringConvertible {
    /// Send `query` to `server` over `transport` (a TCP client's query goes upstream over
    /// TCP, framed by the caller with `DNSTCPFraming`).
    case forward(query: [UInt8], to: DNSServer, over: DNSTransport)
    /// Send `response` to `client` over the transport its query came by.
    case reply(response: [UInt8], to: Client, over: DNSTransport)
    /// Add `elements` to their nft sets, wait until the kernel has acknowledged them, and
    /// only then send `response` (a connection the client opens on reading it must already
    /// match). If the kernel refuses them, send
    /// `DNSErrorReply.make(answering: response, code: .serverFailure)` instead: an answer
    /// whose addresses are not in their sets would send the connection the wrong way.
    case fillThenReply(elements: [DNSSetElement], response: [UInt8], to: Client, over: DNSTransport)

    public var description: String {
        switch self {
        case let .forward(query, server, transport): return "forward \(query.count) bytes to \(server) over \(transport)"
        case let .reply(response, client, transport): return "reply \(response.count) bytes to \(client) over \(transport)"
        case let .fillThenReply(elements, response, client, transport):
            return "fill \(elements.map { "\($0.set) \($0.address) \($0.timeoutSeconds)s" }) then reply \(response.count) bytes to \(client) over \(transport)"
        }
    }
}

extension DNSProxyAction: Sendable where Client: Sendable {}
