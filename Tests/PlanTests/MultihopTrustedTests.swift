import Addresses
import NetTestSupport
import Nftables
import Plan
import Policy
import Routing
import Testing

/// Multihop meets trusted networks: an entry that disconnects empties its table, so the
/// exit's transport (carrying the entry's mark) would go direct and show the exit's server
/// the host's address. The exit is held instead: blocked, its transport dropped first in
/// the entry's egress chain, its status naming the entry.
@Suite struct MultihopTrustedTests {
    let here = SourceLocation(file: "/p/t.toml", line: 4, column: 3)
    static let office = "02:00:5e:00:53:0a"

    func builtIn(_ name: String, index: UInt32, via: String? = nil, rule: TrustedAction? = nil) -> Profile {
        var p = Profile(name: name, location: here, tunnel: .wireguard(config: "/etc/vpnexec/\(name).conf", interface: "vx-\(name)", location: here),
                        access: Access(users: [], groups: [], location: here), killswitch: true, index: index, table: 7300 + index)
        p.via = via.map { Via(entry: $0, location: here) }
        if let rule { p.trusted = [TrustedRule(match: TrustedMatch(gatewayMAC: Self.office), action: rule, location: here)] }
        return p
    }

    let atOffice = NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: office)

    func plan(_ policy: Policy, _ network: NetworkFacts) -> (RuntimeFacts, DesiredState) {
        var facts = RuntimeFacts()
        facts.tunnelTransports["vx-exit"] = TunnelTransport(source: .builtIn, udpPort: 40002, owner: 0, fwmark: 0x0100_0000)
        facts.trusted = TrustedEvaluator.verdicts(policy, network)
        return (facts, Planner.plan(policy, facts: facts))
    }

    /// The exit's rule in its entry's egress chain, without its match.
    func hopRule(_ state: DesiredState, _ exit: String = "exit") throws -> [NftStatement] {
        let chains = state.nft.chains.filter { $0.name.hasPrefix("egress_") }
        let rule = try #require(chains.flatMap(\.rules).first { $0.statements.first == .sourcePortInSet(.udp, set: "hop_udp_\(exit)") })
        return Array(rule.statements.dropFirst(2))
    }

    func defaults(_ state: DesiredState, table: UInt32) -> [Route.Kind] {
        state.routes.filter { $0.table == table && $0.destination.length == 0 }.map(\.kind)
    }

    @Test(arguments: [TrustedAction.disconnect, .block])
    func anEntryThatDoesNotConnectHoldsItsExit(_ action: TrustedAction) throws {
        let policy = Policy(profiles: [builtIn("entry", index: 1, rule: action), builtIn("exit", index: 2, via: "entry")])
        let (facts, state) = plan(policy, atOffice)
        let verdict = try #require(facts.trusted["exit"], "the exit, without rules of its own, gets a verdict from its entry")
        #expect(verdict.action == .block && verdict.heldBy == HopHold(entry: "entry", action: action) && verdict.rule == nil)
        #expect(verdict.reason.contains("profile entry, which carries this tunnel's transport (tunnel.via), \(action.rawValue)s"))
        #expect(try hopRule(state) == [.namedCounter("exit_hop_held"), .verdict(.drop)],
                "dropped before the entry's table (empty under disconnect) could route it to main")
        #expect(!defaults(state, table: 7302).contains { if case .device = $0 { true } else { false } }, "the exit's members are held too")
        #expect(defaults(state, table: 7302).contains(.unreachable))
        if action == .disconnect {
            #expect(defaults(state, table: 7301).isEmpty, "the entry's own members go direct, as its rule says")
        }
    }

    @Test func aConnectedEntryCarriesTheTransport() throws {
        let policy = Policy(profiles: [builtIn("entry", index: 1, rule: .disconnect), builtIn("exit", index: 2, via: "entry")])
        let (facts, state) = plan(policy, NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: "02:00:5e:00:53:0b"))
        #expect(facts.trusted["exit"] == nil && facts.trusted["entry"]?.action == .connect)
        #expect(try hopRule(state) == [.namedCounter("exit_hop")], "counted, then held by the entry's chain as a member's packet")
    }

    @Test func aHopFurtherAlongTheChainHoldsEveryExitBeforeIt() throws {
        let policy = Policy(profiles: [builtIn("first", index: 1, rule: .disconnect), builtIn("middle", index: 2, via: "first"),
                                       builtIn("exit", index: 3, via: "middle")])
        let (facts, state) = plan(policy, atOffice)
        #expect(facts.trusted["middle"]?.heldBy == HopHold(entry: "first", action: .disconnect))
        #expect(facts.trusted["exit"]?.heldBy == HopHold(entry: "first", action: .disconnect), "named by the hop that disconnects")
        #expect(try hopRule(state, "middle").last == .verdict(.drop))
        #expect(try hopRule(state, "exit").last == .verdict(.drop))
    }

    @Test func anExitsOwnVerdictStaysItsOwn() throws {
        let policy = Policy(profiles: [builtIn("entry", index: 1, rule: .block), builtIn("exit", index: 2, via: "entry", rule: .disconnect)])
        let (facts, state) = plan(policy, atOffice)
        #expect(facts.trusted["exit"]?.action == .disconnect && facts.trusted["exit"]?.heldBy == nil,
                "the admin sends the exit's members direct; its tunnel stops, so there is no transport")
        #expect(try hopRule(state).last == .verdict(.drop))
    }

    /// Facts whose verdicts did not go through HopHold.apply (a hand-made plan) still hold the
    /// transport: the planner walks the chain itself.
    @Test func thePlannerHoldsTheTransportFromTheEntrysVerdictAlone() throws {
        let policy = Policy(profiles: [builtIn("entry", index: 1, rule: .disconnect), builtIn("exit", index: 2, via: "entry")])
        var facts = RuntimeFacts()
        facts.trusted["entry"] = TrustedVerdict(action: .disconnect, rule: 1)
        #expect(try hopRule(Planner.plan(policy, facts: facts)) == [.namedCounter("exit_hop_held"), .verdict(.drop)])
    }

    @Test func nftAcceptsTheHeldHop() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())mt", cleanup: cleanup)
        let policy = Policy(profiles: [builtIn("entry", index: 1, rule: .disconnect), builtIn("exit", index: 2, via: "entry")])
        let (_, state) = plan(policy, atOffice)
        try NftCLI.apply(PlanText.render(state), in: namespace, checkOnly: true)
    }
}
