/// A profile tunnel's own transport as vpnd knows it (`vpnctl status`): the socket vpnd keeps
/// out of every profile, and what its loop guard dropped.
public struct TransportStatus: Codable, Hashable, Sendable {
    /// "built-in" (vpnd's engine), "wg-socket" (asked over IFACE.sock) or "unknown".
    public var source: String
    /// The UDP port kept out of every profile (nil: not known).
    public var udpPort: UInt16?
    /// The user that holds it, and the process that answered for it (or holds the device).
    public var owner: UInt32?
    public var pid: Int32?
    /// The mark the tunnel's socket carries, "0x..." as marks are written (nil: none).
    public var fwmark: String?
    /// Its peers' endpoints: packets to them never enter the tunnel.
    public var endpoints: [String]
    /// Ports of the process holding the tunnel device, for a tunnel vpnd cannot ask.
    public var guardedUDPPorts: [UInt16]
    public var guardedTCPPorts: [UInt16]
    /// Why vpnd knows no more.
    public var detail: String?
    /// Packets of the tunnel's own transport that would have entered it (a loop), dropped.
    public var loopDropped: Traffic

    public init(source: String, udpPort: UInt16? = nil, owner: UInt32? = nil, pid: Int32? = nil, fwmark: String? = nil,
                endpoints: [String] = [], guardedUDPPorts: [UInt16] = [], guardedTCPPorts: [UInt16] = [], detail: String? = nil,
                loopDropped: Traffic = Traffic(packets: 0, bytes: 0)) {
        self.source = source
        self.udpPort = udpPort
        self.owner = owner
        self.pid = pid
        self.fwmark = fwmark
        self.endpoints = endpoints
        self.guardedUDPPorts = guardedUDPPorts
        self.guardedTCPPorts = guardedTCPPorts
        self.detail = detail
        self.loopDropped = loopDropped
    }
}
