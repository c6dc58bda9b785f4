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

    /// The real applier in a namespace of its own, the one-profile plan applied until an
    /// apply reads nothing (the first apply's own changes are events, and so are the new
    /// namespace's own, which the kernel may send a little later), and the reads then.
    static func settled(readingEvery interval: Swift.Duration, tag: String,
                        _ body: (NetworkNamespace, KernelApplier, DesiredState, Int) throws -> Void) throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())\(tag)", cleanup: cleanup)
        let applier = try namespace.within { try KernelApplier(programs: nil, routingReadInterval: interval) }
        cleanup.add("teardown") { try applier.teardown() }
        let state = Planner.plan(try policy(["work"]), facts: RuntimeFacts())
        try applier.apply(state)
        var quiet = false
        for _ in 0..<100 where !quiet {
            let reads = applier.routingReads
            try applier.apply(state)
            quiet = applier.routingReads == reads
            if !quiet { Thread.sleep(forTimeInterval: 0.02) }
        }
        try #require(quiet, "the kernel's routing events did not stop within 2 s")
        try body(namespace, applier, state, applier.routingReads)
    }

    @Test func aQuietKernelIsNotReadAgainAndAChangeIsPutRight() throws {
        try Self.settled(readingEvery: .seconds(3600), tag: "rr") { namespace, applier, state, settled in
            let made = try Self.profileRules(namespace)
            #expect(made.count == 1, "\(made)")
            // Applied from a thread outside its namespace: the hold device is made in it.
            #expect(try namespace.run(["ip", "-o", "link"]).contains("vpnexec-hold"))
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
            try applier.apply(Planner.plan(try Self.policy(["work", "home"]), facts: RuntimeFacts()))
            #expect(try Self.profileRules(namespace).count == 2)
        }
    }

    @Test func theRoutingIsReadAgainOnceItsLastReadIsOld() throws {
        try Self.settled(readingEvery: .milliseconds(500), tag: "ri") { _, applier, state, settled in
            try applier.apply(state)
            #expect(applier.routingReads == settled)
            Thread.sleep(forTimeInterval: 0.6)
            try applier.apply(state)
            #expect(applier.routingReads == settled + 1, "no event, but the last read was older than the interval")
        }
    }
}
