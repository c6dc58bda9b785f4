/// An address and a UDP or TCP port: where a WireGuard peer's datagrams come from and go
/// to, and where a tunnel sends its transport.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    public var description: String { address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)" }
}
