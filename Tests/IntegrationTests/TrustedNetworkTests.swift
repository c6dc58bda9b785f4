import Foundation
import NetTestSupport
import Testing

/// Trusted networks in namespaces: the client has two "physical" links, its usual uplink
/// to router B (the `wan` namespace) and a second one to router A, both the same subnet
/// and the same gateway address (198.51.100.1): only the gateway's MAC tells them apart.
/// Moving the default route between them is the network change.
@Suite(.serialized) struct TrustedNetworkTests {
    static let macA = "02:00:5e:00:53:0a"

    /// Router A: its own namespace, the same gateway address as B on a second client link,
    /// and a transit link to `wan` (198.18.0.0/30, the benchmarking range) on to the server.
    /// Answers come back through B's link (the `wan` namespace knows the client's subnet there).
    struct RouterA {
        let namespace: NetworkNamespace
        let clientLink: String
    }

    static func addRouterA(_ scenario: Scenario) throws -> RouterA {
        let net = scenario.net
        let router = try NetworkNamespace("vx\(net.tag)a", cleanup: scenario.cleanup)
        let clientLink = "vx\(net.tag)ca"
        try Command.run(["ip", "link", "add", clientLink, "netns", net.client.name, "type", "veth", "peer", "name", "vx\(net.tag)ac", "netns", router.name])
        try Command.run(["ip", "link", "add", "vx\(net.tag)aw", "netns", router.name, "type", "veth", "peer", "name", "vx\(net.tag)wa", "netns", net.wan.name])
        try router.run(["ip", "link", "set", "vx\(net.tag)ac", "address", macA])
        try net.client.run(["ip", "addr", "add", "198.51.100.2/24", "dev", clientLink])
        try router.run(["ip", "addr", "add", "198.51.100.1/24", "dev", "vx\(net.tag)ac"])
        try router.run(["ip", "addr", "add", "198.18.0.1/30", "dev", "vx\(net.tag)aw"])
        try net.wan.run(["ip", "addr", "add", "198.18.0.2/30", "dev", "vx\(net.tag)wa"])
        for (namespace, link) in [(net.client, clientLink), (router, "vx\(net.tag)ac"), (router, "vx\(net.tag)aw"), (net.wan, "vx\(net.tag)wa")] {
            try namespace.run(["ip", "link", "set", link, "up"])
        }
        try router.run(["ip", "route", "add", "default", "via", "198.18.0.2"])
        try router.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        return RouterA(namespace: router, clientLink: clientLink)
    }

    func defaultRoute(_ scenario: Scenario, _ link: String) throws {
        try scenario.net.client.run(["ip", "route", "replace", "default", "via", "198.51.100.1", "dev", link])
    }

    func trusted(_ scenario: Scenario) throws -> (action: String, rule: Int?, matched: [String: String])? {
        try scenario.daemon.status().profiles.first?.trusted.map { ($0.action, $0.rule, $0.matched) }
    }

    static func policy(_ action: String) -> ([String]) -> String {
        { interfaces in
            """
            [profile.work]
            tunnel.interface = "\(interfaces[0])"
            trusted = [
              { gateway_mac = "\(macA)", action = "\(action)" },
              { search_domain = "never.example", action = "block" },
            ]
            """
        }
    }

    /// `disconnect` on router A: the member goes direct (the service sees the physical
    /// address); back on B it goes through the tunnel. Status and the log name the rule.
    @Test func disconnectOnTheTrustedRouterOnlyAndBack() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scenario = try Scenario(cleanup: cleanup, start: false, policy: Self.policy("disconnect"))
        let routerA = try Self.addRouterA(scenario)
        try scenario.daemon.start()
        #expect(try scenario.member() == scenario.tunnel.clientAddress4)
        #expect(try trusted(scenario)?.action == "connect" && trusted(scenario)?.rule == nil)

        try defaultRoute(scenario, routerA.clientLink)
        try eventually("the rule to match on router A", seconds: 15) { try trusted(scenario)?.action == "disconnect" }
        let verdict = try #require(try trusted(scenario))
        #expect(verdict.rule == 1 && verdict.matched["gateway_mac"] == "\(Self.macA) (gateway 198.51.100.1)", "\(verdict)")
        #expect(try scenario.member() == Topology.clientAddress4, "the member goes direct")
        #expect(try scenario.connect() == Topology.clientAddress4, "non-members as ever")
        let text = try scenario.daemon.vpnctl(["status"]).stdout
        #expect(text.contains("trusted   disconnect (members go direct) for ") && text.contains("rule 1 of 2 (") && text.contains("matched gateway_mac = \(Self.macA)"), "\(text)")
        #expect(text.contains("network   default route \(routerA.clientLink) via 198.51.100.1 (\(Self.macA))"), "\(text)")
        #expect(scenario.daemon.process?.output.contains("trusted networks: profile work disconnects, members go direct (no tunnel, no killswitch): rule 1 (") == true)
        let metrics = try scenario.daemon.vpnctl(["metrics"]).stdout
        #expect(metrics.contains("vpnexec_profile_trusted_action{profile=\"work\",action=\"disconnect\"} 1")
                && metrics.contains("vpnexec_profile_trusted_action{profile=\"work\",action=\"connect\"} 0"), "\(metrics)")
        let plan = try scenario.daemon.vpnctl(["plan"]).stdout
        #expect(plan.hasPrefix("# trusted networks: profile work disconnect (rule 1 (") && !plan.contains("table 7301 metric"), "\(plan.prefix(300))")

        // Same subnet, same gateway address, another router: the tunnel again.
        try defaultRoute(scenario, scenario.net.clientUplink)
        try eventually("the rule to stop matching on router B", seconds: 15) { try trusted(scenario)?.action == "connect" }
        #expect(try scenario.member() == scenario.tunnel.clientAddress4)
        #expect(scenario.daemon.process?.output.contains("trusted networks: profile work connects, through its tunnel: no rule matched") == true)
    }

    /// `block` on router A: members are held, zero cleartext on either link while a
    /// non-member's datagrams are seen (the positive control); back on B, the tunnel.
    @Test func blockHoldsMembersOnTheMatchedRouter() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scenario = try Scenario(cleanup: cleanup, start: false, policy: Self.policy("block"))
        let routerA = try Self.addRouterA(scenario)
        try scenario.daemon.start()
        #expect(try scenario.member() == scenario.tunnel.clientAddress4)

        let onA = try Capture(on: routerA.clientLink, in: scenario.net.client, filter: "udp port 8080 or udp port 9002", cleanup: cleanup)
        let onB = try LeakWatch(on: scenario.net.clientUplink, in: scenario.net.client, probe: scenario.probe, cleanup: cleanup)
        try defaultRoute(scenario, routerA.clientLink)
        try eventually("the block rule to match on router A", seconds: 15) { try trusted(scenario)?.action == "block" }
        let heldBefore = try scenario.daemon.status().profiles[0].droppedByKillswitch.packets
        let sender = try BackgroundProcess(try scenario.daemon.vpnexec(profile: "work", ["python3", scenario.probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
        Thread.sleep(forTimeInterval: 2)
        // Its datagrams go into the hold device (block leaves no tunnel route): refused, counted.
        #expect(sender.isRunning, "the member kept sending")
        let held = try scenario.daemon.status().profiles[0].droppedByKillswitch.packets
        #expect(held >= heldBefore + 50, "what the block holds is counted: \(heldBefore) then \(held) (a datagram every 10 ms for 2 s)")
        #expect((try? scenario.member()) == nil, "a member's connection is refused")
        sender.stop()
        let (leakedB, _) = try onB.stop()
        let leakedA = try onA.packets("udp port 8080")
        let controlA = try onA.count("udp port 9002")
        #expect(leakedA.isEmpty && leakedB.isEmpty, "member packets left in the clear: \(leakedA.prefix(3)) \(leakedB.prefix(3))")
        #expect(controlA > 20, "the capture on router A's link saw the non-member's datagrams")
        let seen = scenario.services.seen()
        #expect(!seen.contains("udp \(Topology.clientAddress4)") && !seen.contains("udp \(scenario.tunnel.clientAddress4)"), "nothing direct, nothing through the tunnel: \(seen)")
        #expect(try scenario.daemon.vpnctl(["status"]).stdout.contains("trusted   block (members held) for "))

        try defaultRoute(scenario, scenario.net.clientUplink)
        try eventually("the tunnel again on router B", seconds: 15) { try trusted(scenario)?.action == "connect" }
        #expect(try scenario.member() == scenario.tunnel.clientAddress4)
    }
}
