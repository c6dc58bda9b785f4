import WireGuard

/// What a running tunnel has to tell its owner, who decides where it is logged: the engine's
/// threads have no log of their own.
public enum TunnelEvent: Sendable, CustomStringConvertible {
    /// A `wg` request was refused, and answered with `code`; `reason` never shows a key.
    case requestRefused(reason: String, code: UAPI.ErrorCode)
    /// `wg set IFACE listen-port N` moved the socket.
    case listenPortChanged(from: UInt16, to: UInt16)
    /// Someone (wg-quick, `ip link set mtu`) changed the interface's MTU; padding follows it.
    case mtuChanged(Int)
    /// The TUN interface was deleted (`ip link delete`, `wg-quick down`): the tunnel has
    /// ended by itself and its `wg` socket is gone.
    case interfaceDeleted
    /// The tunnel went up, down or held (on_demand, idle, `vpnctl up/down`), and why
    /// (`TunnelDemand.why`: with a packet's destination, as status gives it).
    case demandChanged(TunnelDemand.Phase, why: String)

    public var description: String {
        switch self {
        case let .requestRefused(reason, code): "refused a `wg` request (\(code)): \(reason)"
        case let .listenPortChanged(from, to): "UDP port \(from) -> \(to)"
        case let .mtuChanged(mtu): "MTU is now \(mtu)"
        case .interfaceDeleted: "the interface was deleted; the tunnel ends"
        case let .demandChanged(phase, why): "\(phase.rawValue): \(why)"
        }
    }
}
