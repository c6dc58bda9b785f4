import Addresses
import Descriptors
import Netlink
import Routing

/// Gives a fresh TUN interface what a wg-quick file asks: addresses, MTU, up, and (for a
/// standalone client) a route per AllowedIPs prefix, in the main table or the file's
/// `Table`. Everything goes with the interface when its descriptor closes, so there is
/// nothing to undo on the way down.
public enum TunnelInterface {
    /// RTPROT_STATIC: routes an administrator's tool put there.
    static let routeProtocol: UInt8 = 4

    public static func configure(name: String, addresses: [IPPrefix], mtu: UInt32, routes: [IPPrefix], table: UInt32 = 254,
                                 netlink: Rtnetlink) throws {
        guard let link = try netlink.link(named: name) else {
            throw SystemError("interface \(name) vanished before it was configured", code: 19 /* ENODEV */)
        }
        try netlink.setLink(index: link.index, up: false, mtu: mtu)
        for prefix in addresses {
            try netlink.add(InterfaceAddress(interfaceIndex: link.index, prefix: prefix))
        }
        try netlink.setLink(index: link.index, up: true)
        for prefix in routes {
            do {
                try netlink.add(Route(destination: prefix.network, table: table, kind: .device(index: link.index), metric: 0,
                                      protocolNumber: routeProtocol))
            } catch let error as NetlinkError where error.code == 17 /* EEXIST */ {
                // The address's own subnet route already covers it.
            }
        }
    }
}
