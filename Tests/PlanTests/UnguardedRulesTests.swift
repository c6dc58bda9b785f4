import Nftables
import Plan
import Policy
import Testing

/// Cgroups whose socket programs the kernel refused are held by the table: an output
/// chain, there only while such a cgroup exists, drops what their unmarked sockets send
/// anywhere but loopback.
@Suite struct UnguardedRulesTests {
    let policy = Policy(profiles: [profile("work", tunnel: "wg0", index: 1)])

    @Test func nothingUnguardedNothingInTheWay() {
        let state = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101]))
        #expect(state.nft.chain(named: "unguarded") == nil && state.nft.sets.allSatisfy { !$0.name.hasPrefix("unguarded") })
        #expect(!state.nft.chains.contains { $0.base?.hook == .output }, "no output chain: every packet the host sends would pass it")
    }

    @Test func unguardedCgroupsAreHeldByTheirSocketsCgroup() throws {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101], cgroupsAlongParent: ["vpn.slice": 100])
        facts.unguardedCgroups = ["vpn.slice": 100, "vpn.slice/vpn-work.slice": 101]
        let state = Planner.plan(policy, facts: facts)
        let chain = try #require(state.nft.chain(named: "unguarded"))
        #expect(chain.base == NftBaseChain(kind: .filter, hook: .output, priority: NftBaseChain.filter))
        #expect(chain.rules.map(\.statements) == [
            [.markMatch(mask: 0x7f00_0000, value: 0, negated: true), .verdict(.accept)],
            [.toLoopback, .verdict(.accept)],
            [.cgroupVerdictMap(level: 2, map: "unguarded_level_2")],
            [.cgroupVerdictMap(level: 1, map: "unguarded_level_1")],
        ])
        #expect(state.nft.set(named: "unguarded_level_2")?.elements == [NftElement(key: .cgroup(id: 101, path: "vpn.slice/vpn-work.slice"), verdict: .goto("unguarded_drop"))])
        #expect(state.nft.set(named: "unguarded_level_1")?.elements == [NftElement(key: .cgroup(id: 100, path: "vpn.slice"), verdict: .goto("unguarded_drop"))])
        #expect(state.nft.chain(named: "unguarded_drop")?.rules.map(\.statements) == [[.namedCounter("unguarded"), .verdict(.drop)]])
        #expect(state.nft.counters.contains { $0.name == "unguarded" })
        // The programs stay planned: vpnd keeps trying, and the hold ends when they are in.
        #expect(state.socketPrograms.contains { $0.cgroup == "vpn.slice/vpn-work.slice" })
    }

    @Test func theRootAndTheBypassSliceAreNeverHeld() {
        let refused = UnguardedCgroup(id: 1, missing: [.socketCreate], reason: "EPERM")
        let held = UnguardedRules.held(["": refused, "vpn.slice/vpn-bypass.slice": refused, "vpn.slice/vpn-work.slice": refused, "vpn.slice": refused],
                                       policy: policy, parent: "vpn.slice")
        #expect(held == ["vpn.slice/vpn-work.slice": 1, "vpn.slice": 1])
        #expect(UnguardedRules.holds("vpn.slice/vpn-work.slice/vpnd-placed", in: ["vpn.slice/vpn-work.slice"]))
        #expect(UnguardedRules.holds("vpn.slice/vpn-work.slice", in: ["vpn.slice"]))
        #expect(!UnguardedRules.holds("vpn.slice/vpn-work.slicex", in: ["vpn.slice/vpn-work.slice"]))
        #expect(!UnguardedRules.holds("user.slice", in: ["vpn.slice"]))
    }
}
