/// An address and a UDP or TCP port: where a WireGuard peer's datagrams come from and go
/// to, where a tunnel sends its transport, and what vpnd's own sockets bind, send to and
/// receive from. `scopeID` is the interface an IPv6 link-local address is on (0: none); a
/// reply to a link-local sender goes out of the interface it came in on only with it.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16
    public var scopeID: UInt32

    @inlinable
    public init(address: IPAddress, port: UInt16, scopeID: UInt32 = 0) {
        self.address = address
        self.port = port
        self.scopeID = address.isIPv4 ? 0 : scopeID
    }

    public var description: String {
        guard !address.isIPv4 else { return "\(address):\(port)" }
        return scopeID == 0 ? "[\(address)]:\(port)" : "[\(address)%\(scopeID)]:\(port)"
    }
}
