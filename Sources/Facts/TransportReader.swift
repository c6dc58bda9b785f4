import Netlink
import Plan
import Routing

/// How vpnd (and `vpnctl plan`) learn a profile tunnel's own transport, best source first:
/// the tunnel's `wg` socket (userspace WireGuard); else it is unknown, and the sockets of
/// the processes holding the tunnel device, when `holders` can find them, are ports to
/// guard. (vpnd's own engine is known without asking: the daemon puts it in itself.)
/// Kernel WireGuard would answer over generic netlink; that is not built: no machine of
/// ours has the module to prove it on.
public struct TransportReader {
    public let wireguard: WireGuardSocketReader
    /// The processes holding an interface's device (nil: vpnd cannot look into processes).
    public var holders: ((_ interface: String, _ link: Link) -> [TunnelHolder]?)?
    /// This namespace's UDP and TCP sockets.
    public var sockets: (() -> [SocketDiag.Entry])?

    public init(wireguard: WireGuardSocketReader = WireGuardSocketReader()) {
        self.wireguard = wireguard
    }

    public func transport(of interface: String, link: Link?) -> TunnelTransport {
        if let known = wireguard.transport(of: interface) { return known }
        var transport = TunnelTransport(source: .unknown, detail: "no wg socket at \(wireguard.directory)/\(interface).sock")
        // No device, no loop: a tunnel that is not there has nothing to guard.
        guard let link else { return transport }
        guard let holders, let found = holders(interface, link) else {
            transport.detail! += "; vpnd cannot look into processes (its inspector needs CAP_SYS_PTRACE)"
            return transport
        }
        guard let first = found.first else {
            transport.detail! += "; no process of this host holds the device"
            return transport
        }
        let inodes = Set(found.flatMap(\.socketInodes))
        let mine = (sockets?() ?? []).filter { inodes.contains($0.inode) && $0.localPort != 0 }
        transport.guardUDPPorts = Set(mine.filter { !$0.isTCP }.map(\.localPort)).sorted()
        transport.guardTCPPorts = Set(mine.filter(\.isTCP).map(\.localPort)).sorted()
        transport.heldBy = first.pid
        return transport
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
