import Addresses
import Nftables
import Plan
import Policy
import SocketPrograms
import Testing

/// A routed container's veth makes what arrives on it the profile's: the mark before
/// routing, masquerade into the tunnel, its DNS (UDP and TCP) to the proxy, or dropped and
/// counted where the profile's DNS is not served; its cookie is let out of its cgroup. A
/// held one, or one of a profile the policy lacks, gets nothing.
@Suite struct ContainerRulesTests {
    let policy = Policy(profiles: [profile("work", tunnel: "wg0", index: 1), profile("home", tunnel: "tun0", index: 2)])

    @Test func noContainerNoChainsNoNAT() {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.containers = [ContainerNamespace(cookie: 9, profile: "work", state: .held(why: "it has no interface but loopback"))]
        let state = Planner.plan(policy, facts: facts)
        #expect(!state.nft.chains.contains { $0.base?.hook == .prerouting || $0.base?.kind == .nat })
        #expect(!statements(state.nft).contains(where: tracksConnections))
        #expect(state.namespacesLetOut.isEmpty)
    }

    @Test func aRoutedContainerIsTheProfiles() throws {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.containers = [ContainerNamespace(cookie: 9, profile: "home", state: .routed(interfaces: ["ve-a", "ve-b"]), namespace: 3),
                            ContainerNamespace(cookie: 10, profile: "gone", state: .routed(interfaces: ["ve-c"]), namespace: 4),
                            ContainerNamespace(cookie: 11, profile: "work", state: .held(why: "x"))]
        let state = Planner.plan(policy, facts: facts)
        let marks = try #require(state.nft.chain(named: "containers_in"))
        #expect(marks.base == NftBaseChain(kind: .filter, hook: .prerouting, priority: NftBaseChain.mangle))
        let a = NftStatement.inputInterfaceName("ve-a", negated: false), b = NftStatement.inputInterfaceName("ve-b", negated: false)
        #expect(marks.rules.map(\.statements) == [[a, .setMark(0x0200_0000)], [b, .setMark(0x0200_0000)]],
                "the marks; its DNS, UDP and TCP, goes on to the proxy")
        // DNS, UDP and TCP: routed to the profile's DNS table by the veth, its source the
        // profile's steering address on input, then only a proxy's socket takes it.
        let query = { (from: NftStatement, transport: NftTransport) in [from, NftStatement.destinationPort(transport, 53)] }
        #expect(state.nft.chain(named: "containers_dns_nat")?.rules.map(\.statements) == [a, b].flatMap { from in
            [NftTransport.tcp, .udp].flatMap { transport in
                [query(from, transport) + [.sourceNAT(IPAddress("127.77.0.2")!)], query(from, transport) + [.sourceNAT(IPAddress("fd7f:4d::2")!)]]
            }
        })
        #expect(state.nft.chain(named: "containers_dns_nat")?.base == NftBaseChain(kind: .nat, hook: .input, priority: NftBaseChain.srcnat))
        #expect(state.nft.chain(named: "containers_dns")?.rules.map(\.statements) == [a, b].flatMap { from in
            [NftTransport.tcp, .udp].map { query(from, $0) + [.verdict(.goto("steered_dns"))] }
        })
        let veth = state.rules.filter { $0.inputInterface == "ve-a" }
        #expect(veth.count == 4 && veth.allSatisfy { $0.table == 7302 + 131_072 && $0.destinationPorts == 53...53 }
                && Set(veth.compactMap(\.ipProtocol)) == [6, 17], "\(veth)")
        #expect(state.bridgeNft == nil, "no bridge port, no bridge table")
        let nat = try #require(state.nft.chain(named: "containers_nat"))
        #expect(nat.base == NftBaseChain(kind: .nat, hook: .postrouting, priority: NftBaseChain.srcnat - 1))
        #expect(nat.rules.map(\.statements) == [[a, .outputInterfaceName("tun0", negated: false), .masquerade],
                                                [b, .outputInterfaceName("tun0", negated: false), .masquerade]])
        #expect(state.nft.counters.filter { $0.name.hasSuffix("_container_dns") }.map(\.name) == ["home_container_dns"])
        let homeIndex = try #require(policy.profiles.first { $0.name == "home" }?.index)
        #expect(state.namespacesLetOut == [9: ForeignNamespaces.Place(namespace: 3, profileIndex: homeIndex)],
                "only a routed namespace of a profile the policy has, kept with where it is")
    }

    /// A bridge's port: marked in the bridge family's table by the port's name; the rest
    /// knows it by the bridge and the mark, once for two containers on the same bridge.
    @Test func aBridgePortIsMarkedByTheBridgeTable() throws {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.containers = [ContainerNamespace(cookie: 9, profile: "work", state: .routed(interfaces: ["veth1"]), bridges: ["veth1": "podman0"], namespace: 5),
                            ContainerNamespace(cookie: 12, profile: "work", state: .routed(interfaces: ["veth2"]), bridges: ["veth2": "podman0"], namespace: 6)]
        let state = Planner.plan(policy, facts: facts)
        let bridge = try #require(state.bridgeNft)
        #expect(bridge.family == .bridge && bridge.name == "vpnexec")
        #expect(bridge.chains.first?.base == NftBaseChain(kind: .filter, hook: .prerouting, priority: -200))
        #expect(bridge.chains.first?.rules.map(\.statements) == [[.inputInterfaceName("veth1", negated: false), .setMark(0x0100_0000)],
                                                                  [.inputInterfaceName("veth2", negated: false), .setMark(0x0100_0000)]])
        let from: [NftStatement] = [.inputInterfaceName("podman0", negated: false), .markMatch(mask: 0x7f00_0000, value: 0x0100_0000, negated: false)]
        #expect(state.nft.chain(named: "containers_nat")?.rules.map(\.statements) == [from + [.outputInterfaceName("wg0", negated: false), .masquerade]])
        #expect(state.nft.chain(named: "containers_in")?.rules.contains { $0.statements.contains(.setMark(0x0100_0000)) } == false)
        #expect(state.rules.filter { $0.inputInterface == "podman0" }.count == 4, "one DNS rule a family and transport for the bridge")
        let workIndex = try #require(policy.profiles.first { $0.name == "work" }?.index)
        #expect(state.namespacesLetOut == [9: ForeignNamespaces.Place(namespace: 5, profileIndex: workIndex), 12: ForeignNamespaces.Place(namespace: 6, profileIndex: workIndex)])
        #expect(PlanText.render(state).contains("table bridge vpnexec {"))
    }

    /// `forward.interfaces` is a way in as a container's own veth is, by the policy alone.
    @Test func forwardInterfacesAreTheProfilesWaysIn() throws {
        var policy = self.policy
        policy.profiles[0].forwardInterfaces = ["virbr1"]
        let state = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101]))
        let vm = NftStatement.inputInterfaceName("virbr1", negated: false)
        #expect(state.nft.chain(named: "containers_in")?.rules.first?.statements == [vm, .setMark(0x0100_0000)])
        #expect(state.nft.chain(named: "containers_nat")?.rules.map(\.statements) == [[vm, .outputInterfaceName("wg0", negated: false), .masquerade]])
        #expect(state.rules.filter { $0.inputInterface == "virbr1" }.count == 4)
        #expect(state.namespacesLetOut.isEmpty && state.bridgeNft == nil)
    }

    /// A listed interface that carries the host's default route (the uplink) is no way in:
    /// what arrives from the internet, replies to the host's own connections included,
    /// would go into the tunnel.
    @Test func anUplinkInForwardInterfacesIsRefused() throws {
        var policy = self.policy
        policy.profiles[0].forwardInterfaces = ["eth0", "virbr1"]
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.uplinks = ["eth0"]
        let state = Planner.plan(policy, facts: facts)
        let marked = state.nft.chain(named: "containers_in")?.rules.compactMap { $0.statements.first } ?? []
        #expect(marked == [.inputInterfaceName("virbr1", negated: false)], "\(marked)")
        #expect(!state.rules.contains { $0.inputInterface == "eth0" } && !PlanText.render(state).contains("\"eth0\""))
    }

    /// A profile whose DNS is not served (a trusted network's `disconnect`): its containers'
    /// queries, UDP and TCP, are dropped and counted by the mark, before routing; none goes to
    /// a proxy.
    @Test func withoutItsDNSServedAContainersQueriesAreDropped() throws {
        var policy = self.policy
        policy.profiles[0].forwardInterfaces = ["virbr1"]
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.trusted = ["work": TrustedVerdict(action: .disconnect)]
        let state = Planner.plan(policy, facts: facts)
        let work = NftStatement.markMatch(mask: 0x7f00_0000, value: 0x0100_0000, negated: false)
        #expect(state.nft.chain(named: "containers_in")?.rules.map(\.statements).dropFirst() == [NftTransport.tcp, .udp].map { transport in
            [work, .inputInterfaceName("lo", negated: true), .destinationPort(transport, 53), .namedCounter("work_container_dns"), .verdict(.drop)]
        }[...])
        #expect(state.nft.chain(named: "containers_dns_nat") == nil && !state.rules.contains { $0.inputInterface == "virbr1" })
    }

    /// A relayed namespace (slirp4netns's or pasta's tap alone) is let out with no rule: what
    /// it sends reaches only its relay, whose own sockets are a member's or not.
    @Test func aRelayedNamespaceIsLetOutWithNoRule() {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.containers = [ContainerNamespace(cookie: 9, profile: "work", state: .relayed(interfaces: ["tap0"]), namespace: 7),
                            ContainerNamespace(cookie: 10, profile: "gone", state: .relayed(interfaces: ["tap0"]), namespace: 8)]
        let state = Planner.plan(policy, facts: facts)
        #expect(state.namespacesLetOut == [9: ForeignNamespaces.Place(namespace: 7, profileIndex: policy.profiles[0].index)], "only one of a profile the policy has")
        #expect(!state.nft.chains.contains { $0.base?.hook == .prerouting || $0.base?.kind == .nat } && state.bridgeNft == nil)
        #expect(state.rules == Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])).rules)
    }
}
