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

    /// A `wg` socket that is there but did not answer this time (its daemon busy, perhaps
    /// in the very loop this prevents) keeps the port it answered last: forgetting it would
    /// let the tunnel's socket into a profile. Gone sockets and new answers replace it.
    public static func keepingKnown(_ fresh: TunnelTransport, previous: TunnelTransport?) -> TunnelTransport {
        guard fresh.source == .wireguardSocket, fresh.udpPort == nil,
              var kept = previous, kept.source == .wireguardSocket, kept.udpPort != nil else { return fresh }
        kept.detail = "as last answered; now: \(fresh.detail ?? "no answer")"
        return kept
    }
}
