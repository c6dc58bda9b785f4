import Addresses

/// What vpnd knows of a profile tunnel's own transport: the socket that carries its
/// encrypted packets to its peers. That socket must never be routed into a profile (its
/// own tunnel above all: a loop), whatever the socket's cgroup, system mode or
/// route.networks say, and whatever its connection decided before.
public struct TunnelTransport: Hashable, Sendable {
    public enum Source: String, Hashable, Sendable {
        /// vpnd's own engine: it made the socket.
        case builtIn = "built-in"
        /// The `wg` socket of a userspace WireGuard (wireguard-go, boringtun, vpn-server):
        /// `get=1` answered `listen_port`, `fwmark` and the peers' endpoints.
        case wireguardSocket = "wg-socket"
        /// Nobody vpnd can ask: only the sockets of the process holding the tunnel device
        /// (`heldBy`), if vpnd could see it, guard against a loop.
        case unknown
    }

    public var source: Source
    /// The UDP port the tunnel's socket is bound to (IPv4 and IPv6): known, so excluded.
    public var udpPort: UInt16?
    /// Who owns the socket (the uid of the daemon that answered on the `wg` socket, or
    /// vpnd's): only that user's socket on the port is the transport.
    public var owner: UInt32?
    /// The mark the tunnel puts on its socket (wg's `fwmark`), 0 or nil for none.
    public var fwmark: UInt32?
    /// Where the tunnel sends its transport: its peers' endpoints.
    public var endpoints: [Endpoint] = []
    /// Ports of the process that holds the tunnel device, for a tunnel nobody can be asked
    /// about: never allowed into that tunnel.
    public var guardUDPPorts: [UInt16] = []
    public var guardTCPPorts: [UInt16] = []
    /// The process holding the tunnel device, when vpnd found it.
    public var heldBy: Int32?
    /// Why vpnd knows no more (for status and the log).
    public var detail: String?

    public init(source: Source, udpPort: UInt16? = nil, owner: UInt32? = nil, fwmark: UInt32? = nil, endpoints: [Endpoint] = [], detail: String? = nil) {
        self.source = source
        self.udpPort = udpPort
        self.owner = owner
        self.fwmark = fwmark
        self.endpoints = endpoints
        self.detail = detail
    }

    /// The tunnel's own ports that must never enter it: the known one and the guarded ones.
    public var loopUDPPorts: [UInt16] { Array(Set((udpPort.map { [$0] } ?? []) + guardUDPPorts)).sorted() }
}
