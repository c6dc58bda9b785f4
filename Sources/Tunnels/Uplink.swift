import Addresses

/// What a built-in tunnel's UDP rides on toward one peer: the interface the kernel sends it
/// by, the gateway, the source address, and that interface's addresses. nil interface: no
/// route at all (the host is offline).
public struct Uplink: Hashable, Sendable {
    public var interfaceIndex: Int32?
    public var gateway: IPAddress?
    public var source: IPAddress?
    /// The interface's addresses, sorted (an address added or taken counts as a change).
    public var addresses: [IPAddress]

    public init(interfaceIndex: Int32?, gateway: IPAddress?, source: IPAddress?, addresses: [IPAddress]) {
        self.interfaceIndex = interfaceIndex
        self.gateway = gateway
        self.source = source
        self.addresses = addresses
    }

    public static let offline = Uplink(interfaceIndex: nil, gateway: nil, source: nil, addresses: [])
}
