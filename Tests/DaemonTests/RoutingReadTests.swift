@testable import Daemon
import Foundation
import NetTestSupport
import Plan
import Policy
import Testing
import TrustedFiles

/// vpnd applies once a second. The real applier reads our rules, routes and steering
/// addresses back only when the kernel's routing sent an event since its last read (someone's
/// change, or its own), when the routing it is asked for differs from what it last made
/// so, or when that read is older than its interval: a quiet kernel is not dumped every
/// second, and a change is still put right at the next apply.
@Suite(.serialized) struct RoutingReadTests {
    static func policy(_ profiles: [String]) throws -> Policy {
        try Policy.parse([PolicySource(path: "/p/10.toml", text: profiles.map { "[profile.\($0)]\ntunnel.interface = \"wg0\"\n" }.joined(separator: "\n"))],
                         resolver: SystemNameResolver())
    }

    /// The namespace's rules at the profiles' priority.
    static func profileRules(_ namespace: NetworkNamespace) throws -> [String] {
        try namespace.run(["ip", "-4", "rule"]).split(separator: "\n").map(String.init).filter { $0.hasPrefix("7300:") }
    }

    @Test func aQuietKernelIsNotReadAgainAndAChangeIsPutRight() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rr", cleanup: cleanup)
        let applier = try namespace.within { try KernelApplier(programs: nil, routingReadInterval: .seconds(3600)) }
        cleanup.add("teardown") { try applier.teardown() }
        let state = Planner.plan(try Self.policy(["work"]), facts: RuntimeFacts())
        try applier.apply(state)
        let made = try Self.profileRules(namespace)
        #expect(made.count == 1, "\(made)")
        // The first apply's own changes are events: the next apply reads once more.
        try applier.apply(state)
        let settled = applier.routingReads
        for _ in 0..<3 { try applier.apply(state) }
        #expect(applier.routingReads == settled, "nothing changed, nothing read")

        // Someone deletes our rule: its event makes the next apply read, and put it back.
        try namespace.run(["ip", "-4", "rule", "del", "priority", "7300"])
        #expect(try Self.profileRules(namespace).isEmpty)
        try applier.apply(state)
        #expect(try Self.profileRules(namespace) == made)
        #expect(applier.routingReads == settled + 1)

        // Another plan is applied without waiting for any event.
        try applier.apply(state)
        let two = Planner.plan(try Self.policy(["work", "home"]), facts: RuntimeFacts())
        try applier.apply(two)
        #expect(try Self.profileRules(namespace).count == 2)
    }

    @Test func theRoutingIsReadAgainOnceItsLastReadIsOld() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())ri", cleanup: cleanup)
        let applier = try namespace.within { try KernelApplier(programs: nil, routingReadInterval: .milliseconds(500)) }
        cleanup.add("teardown") { try applier.teardown() }
        let state = Planner.plan(try Self.policy(["work"]), facts: RuntimeFacts())
        try applier.apply(state)
        try applier.apply(state)
        let settled = applier.routingReads
        try applier.apply(state)
        #expect(applier.routingReads == settled)
        Thread.sleep(forTimeInterval: 0.6)
        try applier.apply(state)
        #expect(applier.routingReads == settled + 1, "no event, but the last read was older than the interval")
    }
}
