import Addresses
import Cgroups
import DNS
import DomainNames
import NetTestSupport
import Nftables
import Plan
import Policy
import Routing
import Testing

/// What `vpnctl plan` prints must be valid input for the nft CLI (`nft -c -f`), for a
/// policy with several profiles whose cgroups exist.
@Suite(.serialized) struct RenderedPlanIsValidNftTests {
    @Test func nftAcceptsTheRenderedPlan() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())pl", cleanup: cleanup)
        let hierarchy = try CgroupHierarchy.system()
        let parent = "vxtest-\(uniqueTag()).slice"
        var ids: [String: UInt64] = [:]
        // Registered first, so it runs after the children are gone.
        cleanup.add("remove \(parent)") { try hierarchy.remove(parent) }
        var profiles = (1...5).map { profile("p\($0)", tunnel: "wg\($0)", index: UInt32($0), killswitch: $0 != 3) }
        profiles[0].allowLAN = true
        profiles[0].allowMulticast = true
        profiles[0].routeNetworks = [IPPrefix("10.20.0.0/16")!, IPPrefix("fd00:20::/48")!]
        profiles[1].routeNetworks = [IPPrefix("198.51.100.0/24")!]
        profiles[1].bypassDomains = [try DomainPattern("bank.example")]
        profiles[2].routeDomains = [try DomainPattern("*.corp.example")]
        // Multihop: p5's transport through p4's tunnel.
        profiles[4].via = Via(entry: "p4", location: profiles[4].location)
        for p in profiles {
            let path = p.cgroupPath(parent: parent)
            ids[path] = try hierarchy.create(path)
            cleanup.add("remove \(path)") { try hierarchy.remove(path) }
        }
        // System mode on p1, which also has allow_lan: every chain gets its system rules.
        var facts = RuntimeFacts(cgroupParent: parent, cgroupIDs: ids)
        // Every tunnel is missing: the killswitch profiles hold, through the hold device.
        var hold = Link(index: 9, name: HoldDevice.name, isUp: true, isRunning: false, mtu: 1500)
        hold.kind = "tun"
        facts.links[HoldDevice.name] = hold
        // Transports: one known with peers on both families, one guarded by the ports of
        // the process holding its device.
        facts.tunnelTransports["wg1"] = TunnelTransport(source: .wireguardSocket, udpPort: 51820, owner: 0, endpoints: [
            .init(address: IPAddress("203.0.113.2")!, port: 51821), .init(address: IPAddress("2001:db8:2::2")!, port: 51821)])
        var guarded = TunnelTransport(source: .unknown)
        guarded.guardUDPPorts = [1194]
        guarded.guardTCPPorts = [40022, 443]
        facts.tunnelTransports["wg2"] = guarded
        facts.tunnelTransports["wg5"] = TunnelTransport(source: .builtIn, udpPort: 40005, owner: 0, fwmark: 0x0400_0000)
        // A container of p2 routed by its veth, one of p3 held.
        facts.containers = [ContainerNamespace(cookie: 4097, profile: "p2", state: .routed(interfaces: ["ve-box"])),
                            ContainerNamespace(cookie: 4098, profile: "p3", state: .held(why: "its interface mv0 (macvlan) does not lead to the host")),
                            ContainerNamespace(cookie: 4099, profile: "p4", state: .routed(interfaces: ["veth7"]), bridges: ["veth7": "podman0"])]
        let state = Planner.plan(Policy(profiles: profiles, system: SystemSettings(profile: "p1")), facts: facts)
        let text = PlanText.render(state)
        try NftCLI.apply(text, in: namespace, checkOnly: true)
        // And applied for real, then listed: every profile's chain is there.
        try NftCLI.apply(text, in: namespace)
        let listed = try namespace.run(["nft", "list", "table", "inet", "vpnexec"])
        for p in profiles { #expect(listed.contains("chain egress_\(p.name) {") && listed.contains("chain listen_\(p.name) {")) }
        #expect(listed.contains("meta mark & 0x7f000000 == 0x01000000 counter name \"p1_dropped\" reject with icmpx host-unreachable"), "\(listed)")
        #expect(listed.contains("udp sport @tunnel_transport meta skuid @tunnel_transport_owners accept"), "\(listed)")
        #expect(listed.contains("udp sport @hop_udp_p5 meta skuid @tunnel_transport_owners counter name \"p5_hop\""), "\(listed)")
        #expect(listed.contains("elements = { 2001:db8:2::2 }") && listed.contains("tcp sport @loop_tcp_p2"), "\(listed)")
        #expect(listed.contains("oifname vmap @tunnel_loops") && listed.contains("iifname vmap @inbound_tunnels"), "\(listed)")
        #expect(try NftCLI.cgroupKeys(in: namespace, set: "listen_level_2") == ids.values.sorted())
        #expect(listed.contains("iifname \"ve-box\" meta mark set 0x02000000")
                && listed.contains("iifname \"ve-box\" tcp dport 53 snat ip to 127.77.0.2")
                && listed.contains("iifname \"ve-box\" udp dport 53 snat ip to 127.77.0.2")
                && listed.contains("iifname \"ve-box\" oifname \"wg2\" masquerade")
                && listed.contains("iifname \"podman0\" meta mark & 0x7f000000 == 0x04000000 oifname \"wg4\" masquerade"), "\(listed)")
        let bridge = try namespace.run(["nft", "list", "table", "bridge", "vpnexec"])
        #expect(bridge.contains("iifname \"veth7\" meta mark set 0x04000000"), "\(bridge)")
    }
}
