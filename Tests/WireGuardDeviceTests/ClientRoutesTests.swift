import Addresses
import Testing
import WireGuard
@testable import WireGuardDevice

/// wg-quick's `Table` for a standalone client: which AllowedIPs get routes, in which table,
/// and which go through the full-tunnel rules.
@Suite struct ClientRoutesTests {
    let allowed = ["10.8.0.0/24", "0.0.0.0/0", "::/0", "fd08::/64"].map { IPPrefix($0)! }

    @Test func autoRoutesPrefixesInMainAndTakesDefaultsThroughTheRules() {
        let routes = ClientRoutes(allowedIPs: allowed, table: .auto)
        #expect(routes.table == 254)
        #expect(routes.routes.map(\.description) == ["10.8.0.0/24", "fd08::/64"])
        #expect(routes.everything.map(\.description) == ["0.0.0.0/0", "::/0"])
    }

    @Test func offRoutesNothing() {
        let routes = ClientRoutes(allowedIPs: allowed, table: .off)
        #expect(routes.routes.isEmpty && routes.everything.isEmpty)
    }

    @Test func aNumberTakesEveryPrefixDefaultsIncludedAndNoRules() {
        let routes = ClientRoutes(allowedIPs: allowed, table: .number(1234))
        #expect(routes.table == 1234)
        #expect(routes.routes == allowed)
        #expect(routes.everything.isEmpty)
    }
}
