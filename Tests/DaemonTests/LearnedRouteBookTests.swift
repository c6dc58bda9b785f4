import Addresses
@testable import Daemon
import Monotonic
import Plan
import Routing
import Testing

/// Which learned addresses have routes, fed with elements and a clock: a bypassed address
/// is thrown out of the profile's table while its element lives, not while the same
/// profile's proxy has it in the tunneled set (the tunnel wins, in either order), and its
/// routes go when its time is up unless a connection still uses it.
@Suite struct LearnedRouteBookTests {
    let bypass = LearnedRoutes(set: "bypass_dns4_work", ipv4: true, table: 7301,
                               kind: .bypass(tunneledSet: "tunneled_dns4_work", tunnelDestinations: [IPPrefix("192.0.2.0/24")!]))
    let routed = LearnedRoutes(set: "route_dns4_work", ipv4: true, table: 7301, kind: .tunnel(device: 7, holds: true))
    let address = IPAddress("198.51.100.30")!
    let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    func throwRoute(_ address: IPAddress) -> Route {
        Route(destination: IPPrefix(address: address, length: 32)!, table: 7301, kind: .fallThrough, metric: 5, protocolNumber: 119)
    }

    @Test func aBypassedAddressIsThrownWhileItLives() {
        var book = LearnedRouteBook()
        #expect(book.respec([bypass, routed]).isEmpty)
        let added = book.added([("bypass_dns4_work", address, 60)], now: start)
        #expect(added == LearnedRouteBook.Changes(add: [throwRoute(address)]))
        #expect(book.added([("bypass_dns4_work", address, 30)], now: start + .seconds(1)).isEmpty, "a shorter lifetime changes nothing")
        #expect(book.added([("bypass_dns4_work", IPAddress("192.0.2.9")!, 60)], now: start).isEmpty, "a tunnel destination is never thrown")
        #expect(book.expire(now: start + .seconds(59)).isEmpty)
        #expect(book.expire(now: start + .seconds(60)) == LearnedRouteBook.Changes(remove: [throwRoute(address)]))
    }

    @Test func theTunnelWinsInEitherOrder() {
        var book = LearnedRouteBook()
        _ = book.respec([bypass])
        // Bypassed first, then answered for a name that is not: the throw goes.
        _ = book.added([("bypass_dns4_work", address, 600)], now: start)
        #expect(book.added([("tunneled_dns4_work", address, 60)], now: start) == LearnedRouteBook.Changes(remove: [throwRoute(address)]))
        // When the tunneled answer ends first, the bypass applies again.
        #expect(book.expire(now: start + .seconds(60)) == LearnedRouteBook.Changes(add: [throwRoute(address)]))
        // Tunneled first: the bypassed answer adds nothing.
        let other = IPAddress("198.51.100.31")!
        _ = book.added([("tunneled_dns4_work", other, 60)], now: start + .seconds(61))
        #expect(book.added([("bypass_dns4_work", other, 600)], now: start + .seconds(61)).isEmpty)
    }

    @Test func anAddressInUseKeepsItsRoutes() {
        var book = LearnedRouteBook()
        _ = book.respec([routed])
        let routes = book.added([("route_dns4_work", address, 60)], now: start).add
        #expect(routes.map(\.kind) == [.device(index: 7), .unreachable])
        #expect(book.due(now: start + .seconds(60)).map(\.address) == [address])
        #expect(book.expire(now: start + .seconds(60)) { _, _ in true }.isEmpty, "a connection still uses it")
        #expect(book.expire(now: start + .seconds(61)).remove == routes)
    }

    @Test func aNewPlanMovesEveryAddressesRoutes() {
        var book = LearnedRouteBook()
        _ = book.respec([routed])
        let before = book.added([("route_dns4_work", address, 60)], now: start).add
        let down = LearnedRoutes(set: "route_dns4_work", ipv4: true, table: 7301, kind: .tunnel(device: nil, holds: true))
        let changes = book.respec([down])
        #expect(changes.remove == before.filter { $0.kind != .unreachable } && changes.add.isEmpty, "the tunnel went down: its route goes, the hold stays")
        #expect(book.respec([]).remove.map(\.kind) == [.unreachable], "no plan for the set: everything of it goes")
    }
}
