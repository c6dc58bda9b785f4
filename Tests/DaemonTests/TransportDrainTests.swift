import Addresses
@testable import Daemon
import Foundation
import NetTestSupport
import Plan
import Policy
import Testing
import TrustedFiles

/// A transport port that becomes known while rules of ours were in the kernel drains for a
/// second: the real applier, in a namespace of its own, puts the rule that looks the
/// draining map up first in the chain for unmarked packets, with the port's element, and
/// takes the rule out at the first apply after the second. Every datagram of a userspace
/// tunnel's transport passes that chain, so the rule is there only while a port drains.
@Suite(.serialized) struct TransportDrainTests {
    static let policy = try! Policy.parse([PolicySource(path: "/p/10.toml", text: """
        [profile.work]
        tunnel.interface = "wg0"
        route.networks = ["198.51.100.0/24"]
        """)], resolver: SystemNameResolver())

    static func facts(port: UInt16?) -> RuntimeFacts {
        var facts = RuntimeFacts()
        facts.tunnelTransports["wg0"] = port.map { TunnelTransport(source: .wireguardSocket, udpPort: $0, owner: 0) }
            ?? TunnelTransport(source: .unknown, detail: "not yet")
        return facts
    }

    static func unmarked(_ namespace: NetworkNamespace) throws -> String {
        try namespace.run(["nft", "list", "chain", "inet", "vpnexec", "unmarked"])
    }

    @Test func aPortLearnedLaterDrainsASecondAndTheRuleGoesAfter() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())dr", cleanup: cleanup)
        let applier = try namespace.within { try KernelApplier() }
        var drained: [UInt16] = []
        applier.onTransportDrained = { drained.append($0) }
        cleanup.add("teardown") { try applier.teardown() }

        // A first apply: no rule of ours was there, nothing can have looped, nothing held.
        try applier.apply(Planner.plan(Self.policy, facts: Self.facts(port: 40000)))
        #expect(drained.isEmpty)
        #expect(try !Self.unmarked(namespace).contains("transport_draining"))

        // The port moves: its exclusion rule is new while rules of ours exist.
        try applier.apply(Planner.plan(Self.policy, facts: Self.facts(port: 51820)))
        #expect(drained == [51820])
        let held = try Self.unmarked(namespace)
        let first = held.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.first { $0.hasPrefix("udp") || $0.hasPrefix("meta") }
        #expect(first == "udp sport vmap @transport_draining comment \"a transport port draining\"", "\(held)")
        let map = try namespace.run(["nft", "list", "map", "inet", "vpnexec", "transport_draining"])
        #expect(map.contains("51820") && map.contains("jump held_work"), "\(map)")

        // Within the second, an apply keeps it; the first one after takes it out.
        try applier.apply(Planner.plan(Self.policy, facts: Self.facts(port: 51820)))
        #expect(try Self.unmarked(namespace).contains("transport_draining"))
        Thread.sleep(forTimeInterval: Double(TransportRules.drainSeconds) + 0.2)
        try applier.apply(Planner.plan(Self.policy, facts: Self.facts(port: 51820)))
        #expect(try !Self.unmarked(namespace).contains("transport_draining"))
        #expect(try namespace.run(["nft", "list", "map", "inet", "vpnexec", "transport_draining"]).contains("elements") == false,
                "the element ended by its own timeout")
        #expect(drained == [51820])
    }
}
