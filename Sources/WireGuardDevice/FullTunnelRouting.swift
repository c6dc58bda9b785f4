import Addresses
import Glibc
import Netlink
import Routing

/// A standalone client whose AllowedIPs include 0.0.0.0/0 or ::/0, routed as wg-quick does:
/// a table holding only "default dev TUN", looked up by every packet that does not carry the
/// tunnel's own mark, after the main table has had its say for everything but its default
/// route. The encrypted datagrams carry the mark and so keep the uplink's route.
public struct FullTunnelRouting: Sendable {
    public static let table: UInt32 = 51820
    /// Just before main (32766): first "main, but not its default", then "not our mark".
    static let suppressPriority: UInt32 = 32760
    static let tunnelPriority: UInt32 = 32761
    /// RTPROT_STATIC, as for the client's other routes.
    static let protocolNumber: UInt8 = 4

    public let rules: [RoutingRule]
    public let routes: [Route]

    public init(interfaceIndex: Int32, ipv4: Bool, ipv6: Bool, mark: UInt32) {
        var rules: [RoutingRule] = []
        var routes: [Route] = []
        for family in [true, false] where family ? ipv4 : ipv6 {
            rules.append(RoutingRule(ipv4: family, priority: Self.suppressPriority, mark: 0, mask: 0, table: 254,
                                     protocolNumber: Self.protocolNumber, suppressPrefixLength: 0))
            rules.append(RoutingRule(ipv4: family, priority: Self.tunnelPriority, mark: mark, mask: 0xffff_ffff, table: Self.table,
                                     protocolNumber: Self.protocolNumber, invert: true))
            routes.append(Route(destination: .defaultRoute(ipv4: family), table: Self.table, kind: .device(index: interfaceIndex),
                                metric: 0, protocolNumber: Self.protocolNumber))
        }
        self.rules = rules
        self.routes = routes
    }

    /// Routes first, then rules: no instant in which the rule points at an empty table.
    public func apply(_ netlink: Rtnetlink) throws {
        for route in routes { try netlink.add(route) }
        for rule in rules { try netlink.add(rule) }
        // Replies to marked packets must pass the reverse-path check against the same table.
        try SysctlWriter.write("net/ipv4/conf/all/src_valid_mark", "1")
    }

    /// The rules go; the routes went with the interface.
    public func remove(_ netlink: Rtnetlink) {
        for rule in rules { try? netlink.delete(rule) }
    }
}
