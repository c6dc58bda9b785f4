import Plan

/// How vpnd (and `vpnctl plan`) learn a profile tunnel's own transport, best source first:
/// the tunnel's `wg` socket (userspace WireGuard); else it is unknown, and only the
/// process holding the tunnel device, when `holders` can find it, gives ports to guard.
/// (vpnd's own engine is known without asking: the daemon puts it in itself.) Kernel
/// WireGuard would answer over generic netlink; that is not built: no machine of ours has
/// the module to prove it on.
public struct TransportReader: Sendable {
    public let wireguard: WireGuardSocketReader

    public init(wireguard: WireGuardSocketReader = WireGuardSocketReader()) {
        self.wireguard = wireguard
    }

    public func transport(of interface: String) -> TunnelTransport {
        if let known = wireguard.transport(of: interface) { return known }
        return TunnelTransport(source: .unknown, detail: "no wg socket at \(wireguard.directory)/\(interface).sock")
    }
}
