import Addresses
import Daemon
import Foundation
import Netlink
import NetTestSupport
import Nftables
import Plan
import Testing

/// Elements the DNS proxy adds at run time live in the kernel: a whole-table replace (a
/// reload, a restarted vpnd) carries them into the new table in the same batch, with the
/// time they had left.
@Suite(.serialized) struct RunTimeElementsTests {
    func state(chains: Int) -> DesiredState {
        var table = NftTable(family: .inet, name: vpnexecTableName,
                             sets: [NftSet(name: "learned4", key: .ipv4Address, timeout: true),
                                    NftSet(name: "learned6", key: .ipv6Address, timeout: true)])
        table.chains = (0..<chains).map { NftChain(name: "c\($0)") }
        return DesiredState(nft: table, rules: [], routes: [], sysctls: [], cgroups: [])
    }

    @Test func aReplaceCarriesThemOver() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        try namespace.within {
            let applier = try KernelApplier()
            try applier.apply(state(chains: 1))
            try applier.addRuntimeElements([NftElement(key: .prefix(IPPrefix("192.0.2.7/32")!), timeout: 300),
                                            NftElement(key: .prefix(IPPrefix("192.0.2.8/32")!), timeout: 20)], to: "learned4")
            try applier.addRuntimeElements([NftElement(key: .prefix(IPPrefix("2001:db8::7/128")!), timeout: 300)], to: "learned6")
            // A different table shape: replaced whole, by a new applier as after a restart.
            let restarted = try KernelApplier()
            try restarted.apply(state(chains: 2))
            let client = try NftablesClient()
            let v4 = try client.elements(of: "learned4", keyType: .ipv4Address, family: .inet, table: vpnexecTableName)
            #expect(Set(v4.map(\.key)) == [.prefix(IPPrefix("192.0.2.7/32")!), .prefix(IPPrefix("192.0.2.8/32")!)])
            #expect(v4.allSatisfy { ($0.timeout ?? 0) > 0 && ($0.timeout ?? 0) <= 300 })
            #expect(v4.first { $0.key == .prefix(IPPrefix("192.0.2.8/32")!) }?.timeout ?? 999 <= 20, "the time left, not a fresh timeout")
            #expect(try client.elements(of: "learned6", keyType: .ipv6Address, family: .inet, table: vpnexecTableName).count == 1)
            // The same again: nothing to do, nothing lost.
            try restarted.apply(state(chains: 2))
            #expect(try client.elements(of: "learned4", keyType: .ipv4Address, family: .inet, table: vpnexecTableName).count == 2)
            try restarted.teardown()
        }
    }
}
