import Addresses
@testable import Daemon
import NetTestSupport
import Nftables
import Plan
import Testing
import Applying

/// The fake answers what the daemon asks as the real applier does (in a namespace of its
/// own), so tests against the fake say something about vpnd: the same steps, the same
/// answers.
@Suite(.serialized) struct FakeApplierContractTests {
    static let learned = NftElement(key: .prefix(IPPrefix("192.0.2.7/32")!), timeout: 300)
    static let fixed = NftElement(key: .prefix(IPPrefix("198.51.100.9/32")!))

    static func state(chains: Int) -> DesiredState {
        var table = NftTable(family: .inet, name: vpnexecTableName, counters: [NftCounter(name: "sent")],
                             sets: [NftSet(name: "learned4", key: .ipv4Address, timeout: true),
                                    NftSet(name: "fixed4", key: .ipv4Address, elements: [fixed])])
        table.chains = (0..<chains).map { NftChain(name: "c\($0)") }
        return DesiredState(nft: table, rules: [], routes: [], sysctls: [], cgroups: [])
    }

    /// What the daemon sees of an applier along one life: elements before a table, after,
    /// through a replace, the counters, and after a teardown.
    static func observe(_ applier: any KernelApplying) throws -> [String] {
        var seen: [String] = []
        seen.append("elements before a table: " + ((try? applier.addRuntimeElements([learned], to: "learned4")) == nil ? "refused" : "taken"))
        try applier.apply(state(chains: 1))
        try applier.addRuntimeElements([learned], to: "learned4")
        seen.append("learned: \(try applier.elements(of: "learned4", ipv4: true).map(\.key))")
        seen.append("fixed: \(try applier.elements(of: "fixed4", ipv4: true).map(\.key))")
        try applier.apply(state(chains: 1))
        try applier.apply(state(chains: 2))
        seen.append("learned after a replace: \(try applier.elements(of: "learned4", ipv4: true).map(\.key))")
        seen.append("counters: \(try applier.counters().mapValues { [$0.packets, $0.bytes] }.sorted { $0.key < $1.key })")
        try applier.teardown()
        seen.append("elements after a teardown: " + ((try? applier.addRuntimeElements([learned], to: "learned4")) == nil ? "refused" : "taken"))
        return seen
    }

    @Test func theFakeAnswersAsTheKernelDoes() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())fc", cleanup: cleanup)
        let real = try namespace.within { try Self.observe(try KernelApplier()) }
        let fake = try Self.observe(FakeKernelApplier())
        #expect(real == fake)
        #expect(real == ["elements before a table: refused",
                         "learned: \([Self.learned.key])", "fixed: \([Self.fixed.key])",
                         "learned after a replace: \([Self.learned.key])",
                         "counters: \([(key: "sent", value: [UInt64(0), 0])])",
                         "elements after a teardown: refused"])
    }
}
