import Addresses
@testable import Daemon
import Foundation
import NetTestSupport
import Nftables
import Plan
import Policy
import Routing
import Testing
import TrustedFiles

/// A learned route someone else deletes comes back before its element ends: the real
/// applier, in a namespace of its own, puts back what the routing monitor says was deleted
/// if its book still has it (and nothing else: the daemon's own removals come back as
/// events too), and after lost events compares every learned route at the next apply.
@Suite(.serialized) struct LearnedRouteRestoreTests {
    static let policy = try! Policy.parse([PolicySource(path: "/p/10.toml", text: """
        [profile.work]
        tunnel.interface = "wg0"
        bypass.domains = ["bank.example"]
        """)], resolver: SystemNameResolver())

    static func learned(_ namespace: NetworkNamespace) throws -> String {
        try namespace.run(["ip", "-4", "route", "show", "table", "all", "proto", "119"])
    }

    @Test func aDeletedLearnedRouteIsPutBackWhileWanted() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())lr", cleanup: cleanup)
        let applier = try namespace.within { try KernelApplier() }
        cleanup.add("teardown") { try applier.teardown() }
        let state = Planner.plan(Self.policy, facts: RuntimeFacts())
        try applier.apply(state)
        let address = try #require(IPPrefix("198.18.0.1/32"))
        try applier.addRuntimeElements([NftElement(key: .prefix(address), timeout: 60)], to: "bypass_dns4_work")
        let table = Self.policy.profiles[0].table
        let route = Route(destination: address, table: table, kind: .fallThrough, metric: 5, protocolNumber: vpnexecLearnedRouteProtocol)
        #expect(try Self.learned(namespace).contains("throw 198.18.0.1 table \(table)"), "the bypassed address's route")

        // Deleted by hand: what the monitor reports is put back, once.
        try namespace.run(["ip", "route", "del", "throw", "198.18.0.1", "table", String(table), "proto", "119"])
        #expect(try Self.learned(namespace).isEmpty)
        let other = Route(destination: try #require(IPPrefix("198.18.0.9/32")), table: table, kind: .fallThrough, metric: 5,
                          protocolNumber: vpnexecLearnedRouteProtocol)
        #expect(try applier.restoreLearnedRoutes([route, other]) == [route], "only what the book has")
        let back = try Self.learned(namespace)
        #expect(back.contains("throw 198.18.0.1 table \(table)") && !back.contains("198.18.0.9"), "\(back)")

        // Events lost: nothing is known, the next apply compares and puts it back.
        try namespace.run(["ip", "route", "del", "throw", "198.18.0.1", "table", String(table), "proto", "119"])
        #expect(try applier.restoreLearnedRoutes(nil) == [])
        #expect(try Self.learned(namespace).isEmpty)
        try applier.apply(state)
        #expect(try Self.learned(namespace).contains("throw 198.18.0.1 table \(table)"), "the apply after lost events")
        // A periodic apply (nothing lost) does not read the learned routes back.
        try namespace.run(["ip", "route", "del", "throw", "198.18.0.1", "table", String(table), "proto", "119"])
        try applier.apply(state)
        #expect(try Self.learned(namespace).isEmpty, "only an event or lost events bring it back")
    }
}
