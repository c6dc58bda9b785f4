import Addresses
import WireGuard

/// Where a standalone client routes its peers' AllowedIPs, as wg-quick decides it from
/// `Table =`: with `auto`, every prefix goes into the main table except 0.0.0.0/0 and ::/0,
/// which take the whole host through the tunnel (`FullTunnelRouting`: fwmark rules and a
/// table of their own); with `off`, nothing is routed (the administrator routes); with a
/// number, every prefix, the defaults included, goes into that table and no rule is added.
public struct ClientRoutes: Sendable, Equatable {
    /// The table `routes` go into.
    public var table: UInt32
    public var routes: [IPPrefix]
    /// The default routes to take through `FullTunnelRouting`; empty unless `auto`.
    public var everything: [IPPrefix]

    public static let mainTable: UInt32 = 254

    public init(allowedIPs: [IPPrefix], table: WgQuickConfig.RouteTable) {
        switch table {
        case .auto:
            self.table = Self.mainTable
            routes = allowedIPs.filter { $0.length > 0 }
            everything = allowedIPs.filter { $0.length == 0 }
        case .off:
            self.table = Self.mainTable
            routes = []
            everything = []
        case let .number(number):
            self.table = number
            routes = allowedIPs
            everything = []
        }
    }
}
