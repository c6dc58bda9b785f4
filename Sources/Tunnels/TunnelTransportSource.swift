import Facts
import Monotonic
import Plan
import Routing

/// Each profile tunnel's own transport as a facts read finds it: a built-in tunnel's is
/// vpnd's own socket, known without asking (BuiltInTunnels, read live: a pass starts tunnels
/// between its two reads); another's is read (TransportReader), a `wg` socket that did not
/// answer keeping what it answered last (`known`, TransportWatch's, handed after each pass).
public struct TunnelTransportSource {
    let tunnels: BuiltInTunnels
    let wireguard: WireGuardSocketReader
    let holders: TunnelHolderCache
    /// The inspector's answer for a pid (nil: vpnd cannot look into processes).
    let ask: ((Int32) -> [UInt8]?)?
    /// The transports as TransportWatch last logged them, by interface.
    public var known: [String: TunnelTransport] = [:]

    /// `wireguardDirectory`: where userspace WireGuard daemons serve their `wg` sockets.
    public init(tunnels: BuiltInTunnels, wireguardDirectory: String, holders: TunnelHolderCache, ask: ((Int32) -> [UInt8]?)?) {
        self.tunnels = tunnels
        wireguard = WireGuardSocketReader(directory: wireguardDirectory)
        self.holders = holders
        self.ask = ask
    }

    /// `builtIn`: the built-in tunnels' interfaces (their files, as the policy has them);
    /// `now`: the facts read's time (when the holders of a device were last looked for).
    public func transport(of interface: String, link: Link?, builtIn: Set<String>, now: MonotonicInstant) -> TunnelTransport {
        if builtIn.contains(interface) { return tunnels.transport(interface: interface) }
        var reader = TransportReader(wireguard: wireguard)
        if let ask {
            reader.holders = { [holders] in holders.holders(of: $0, link: $1, now: now, ask: ask) }
            reader.sockets = { [holders] in holders.sockets() }
        }
        return TransportReader.keepingKnown(reader.transport(of: interface, link: link), previous: known[interface])
    }
}
