import Netlink

/// Follows the tunnel interface's MTU, which is not the engine's to decide: wg-quick sets
/// it after the engine started (`ip link set mtu 1420 up dev wg0`), and an administrator
/// may change it at any time. Padding must never take a packet past it, and the buffers
/// must hold the largest packet it allows.
final class MTUWatch {
    private let monitor: RoutingMonitor
    private let netlink: Rtnetlink
    private let interface: String

    /// Subscribes before the interface exists, so no change after its creation is missed.
    init(interface: String) throws {
        monitor = try RoutingMonitor()
        netlink = try Rtnetlink()
        self.interface = interface
    }

    /// For poll(): readable when links (or routes) changed.
    var fileDescriptor: Int32 { monitor.fileDescriptor.raw }

    /// The interface's MTU now, after reading the pending events; nil when it cannot be
    /// read (renamed, or gone: deletion is noticed on the TUN itself).
    func current() -> Int? {
        _ = monitor.drain()
        return (try? netlink.link(named: interface)).flatMap { $0 }.map { Int($0.mtu) }
    }
}
