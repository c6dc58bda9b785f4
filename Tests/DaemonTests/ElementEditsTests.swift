import Addresses
@testable import Daemon
import Nftables
import Testing

/// A cgroup that appears or is re-created costs element edits, not a table rebuild.
@Suite struct ElementEditsTests {
    func table(_ elements: [NftElement], counters: UInt64 = 0) -> NftTable {
        NftTable(family: .inet, name: "vpnexec",
                 counters: [NftCounter(name: "c", packets: counters, bytes: counters)],
                 sets: [NftSet(name: "cgroup_level_2", key: .cgroupv2, data: .verdict, elements: elements)],
                 chains: [NftChain(name: "member_a")])
    }

    let a = NftElement(key: .cgroup(id: 1, path: "x/a"), verdict: .jump("member_a"))
    let b = NftElement(key: .cgroup(id: 2, path: "x/b"), verdict: .jump("member_a"))

    @Test func onlyElementsChanged() throws {
        let edits = try #require(KernelApplier.elementEdits(from: table([a]), to: table([b], counters: 9)))
        #expect(edits.added.map(\.0) == ["cgroup_level_2"])
        #expect(edits.added.first?.1 == [b])
        #expect(edits.removed.first?.1 == [a])
    }

    @Test func anythingElseMeansReplace() {
        var changed = table([a])
        changed.chains.append(NftChain(name: "member_b"))
        #expect(KernelApplier.elementEdits(from: table([a]), to: changed) == nil)
    }

    @Test func countersDoNotCount() {
        #expect(KernelApplier.comparable(table([a], counters: 5)) == KernelApplier.comparable(table([a])))
    }

    /// Elements of timeout sets are the kernel's (learned at run time): never compared,
    /// never edited away.
    @Test func runTimeElementsAreNotCompared() throws {
        func learned(_ elements: [NftElement]) -> NftTable {
            var t = table([a])
            t.sets.append(NftSet(name: "dns4", key: .ipv4Address, elements: elements, timeout: true))
            return t
        }
        let element = NftElement(key: .prefix(IPPrefix("192.0.2.1/32")!), timeout: 60)
        #expect(KernelApplier.comparable(learned([element])) == KernelApplier.comparable(learned([])))
        let edits = try #require(KernelApplier.elementEdits(from: learned([element]), to: learned([])))
        #expect(edits.added.isEmpty && edits.removed.isEmpty)
    }
}
