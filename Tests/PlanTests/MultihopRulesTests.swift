import Addresses
import Nftables
import Plan
import Policy
import Testing

/// Multihop: the exit's transport goes into the entry's tunnel (its socket's mark: the
/// entry's table, the entry's killswitch), counted first in the entry's egress chain, never
/// direct and never into its own tunnel; every other tunnel's transport still goes direct.
@Suite struct MultihopRulesTests {
    let mask: UInt32 = 0x7f00_0000, bypass: UInt32 = 0x7f00_0000
    let here = SourceLocation(file: "/p/t.toml", line: 1, column: 1)

    func builtIn(_ name: String, index: UInt32, via: String? = nil) -> Profile {
        var p = Profile(name: name, location: here, tunnel: .wireguard(config: "/etc/vpnexec/\(name).conf", interface: "vx-\(name)", location: here),
                        access: Access(users: [], groups: [], location: here), killswitch: true, index: index, table: 7300 + index)
        p.via = via.map { Via(entry: $0, location: here) }
        return p
    }

    var policy: Policy { Policy(profiles: [builtIn("entry", index: 1), builtIn("exit", index: 2, via: "entry"), builtIn("other", index: 3)]) }

    var facts: RuntimeFacts {
        var facts = RuntimeFacts()
        facts.tunnelTransports["vx-entry"] = TunnelTransport(source: .builtIn, udpPort: 40001, owner: 0, fwmark: bypass,
                                                             endpoints: [.init(address: IPAddress("192.0.2.1")!, port: 51820)])
        facts.tunnelTransports["vx-exit"] = TunnelTransport(source: .builtIn, udpPort: 40002, owner: 0, fwmark: 0x0100_0000,
                                                            endpoints: [.init(address: IPAddress("198.51.100.1")!, port: 51820)])
        facts.tunnelTransports["vx-other"] = TunnelTransport(source: .builtIn, udpPort: 40003, owner: 0, fwmark: bypass)
        return facts
    }

    @Test func eachSocketCarriesItsMark() throws {
        let policy = self.policy
        #expect(MultihopRules.socketMark(try #require(policy.profile(named: "exit")), in: policy, fileMark: nil) == 0x0100_0000,
                "the exit's socket carries the entry's mark")
        #expect(MultihopRules.socketMark(try #require(policy.profile(named: "exit")), in: policy, fileMark: 0x1234) == 0x0100_0000,
                "via wins over the file's FwMark")
        #expect(MultihopRules.socketMark(try #require(policy.profile(named: "entry")), in: policy, fileMark: nil) == bypass)
        #expect(MultihopRules.socketMark(try #require(policy.profile(named: "other")), in: policy, fileMark: 0x1234) == 0x1234)
    }

    @Test func theExitsTransportGoesIntoTheEntryNotDirect() throws {
        let state = Planner.plan(policy, facts: facts)
        #expect(state.nft.set(named: "tunnel_transport")?.elements == [NftElement(key: .port(40001)), NftElement(key: .port(40003))],
                "the exit's port is not sent direct")
        #expect(state.nft.set(named: "hop_udp_exit")?.elements == [NftElement(key: .port(40002))])
        let entry = try #require(state.nft.chain(named: "egress_entry")).rules.map(\.statements)
        #expect(entry[1] == [.sourcePortInSet(.udp, set: "hop_udp_exit"), .socketUserInSet("tunnel_transport_owners"), .namedCounter("exit_hop")],
                "counted first in the entry's chain, then held by it like a member's packet")
        #expect(!state.rules.contains { $0.priority > 7301 }, "it needs no rule: its socket carries the entry's mark")
        #expect(state.nft.counters.contains { $0.name == "exit_hop" })
        #expect(state.nft.set(named: "hop_udp_entry") == nil && state.nft.set(named: "hop_udp_other") == nil)
    }

    @Test func theExitsTransportNeverEntersItsOwnTunnelAndIsHeldByTheEntry() throws {
        let state = Planner.plan(policy, facts: facts)
        // Its own loop guard stays: its port and its server.
        #expect(state.nft.set(named: "loop_udp_exit")?.elements == [NftElement(key: .port(40002))])
        #expect(state.nft.set(named: "loop_peer4_exit")?.elements == [NftElement(key: .prefix(IPPrefix("198.51.100.1/32")!))])
        // Marked as the entry's, it meets the entry's egress chain: through vx-entry or dropped.
        let entry = try #require(state.nft.chain(named: "egress_entry")).rules.map(\.statements)
        #expect(entry.contains([.outputInterfaceName("vx-entry", negated: false), .namedCounter("entry_tunnel"), .verdict(.accept)]))
        #expect(entry.last == [.namedCounter("entry_dropped"), .verdict(.drop)])
        #expect(!entry.contains { $0.contains(.outputInterfaceName("vx-exit", negated: false)) && $0.contains(.verdict(.accept)) })
        // The entry's table ends unreachable: with vx-entry down nothing falls to main.
        #expect(state.routes.contains { $0.table == 7301 && $0.kind == .unreachable })
    }

    /// Before vpnd knows the port the set is empty (the socket's mark routes it meanwhile):
    /// learning it is an element edit.
    @Test func learningThePortIsAnElementEdit() throws {
        var unknown = facts
        unknown.tunnelTransports["vx-exit"] = nil
        let before = Planner.plan(policy, facts: unknown).nft, after = Planner.plan(policy, facts: facts).nft
        #expect(before.chains == after.chains)
        #expect(before.set(named: "hop_udp_exit")?.elements == [])
    }
}
