import Addresses
import NetTestSupport
import Nftables
import Plan
import Policy
import Routing
import Testing

/// Trusted networks, pure: the evaluator picks the first rule whose every field matches,
/// and the planner turns each action into the profile's routes and killswitch.
@Suite struct TrustedNetworksPlanTests {
    static let here = SourceLocation(file: "/p/t.toml", line: 3, column: 5)
    static let home = "02:00:5e:00:53:0a"
    let rules = [
        TrustedRule(match: TrustedMatch(gatewayMAC: home), action: .disconnect, location: here),
        TrustedRule(match: TrustedMatch(interface: "wl*", searchDomain: "corp.example"), action: .connect, location: here),
        TrustedRule(match: TrustedMatch(interface: "wl*"), action: .block, location: here),
        TrustedRule(match: TrustedMatch(ssid: "Cafe"), action: .block, location: here),
    ]

    @Test func firstRuleWhoseEveryFieldMatchesWins() {
        let atHome = TrustedEvaluator.verdict(rules, NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: Self.home))
        #expect(atHome == TrustedVerdict(action: .disconnect, rule: 1, location: Self.here, matched: ["gateway_mac": "\(Self.home) (gateway 198.51.100.1)"]))
        #expect(atHome.reason == "rule 1 (/p/t.toml:3:5): gateway_mac = \(Self.home) (gateway 198.51.100.1)")
        // The same subnet behind another router: not the trusted one.
        let elsewhere = TrustedEvaluator.verdict(rules, NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: "02:00:5e:00:53:0b"))
        #expect(elsewhere == TrustedVerdict(action: .connect))
        #expect(elsewhere.reason == "no rule matched")
        // Both fields of rule 2 match; with only one, rule 3 decides.
        let office = TrustedEvaluator.verdict(rules, NetworkFacts(interface: "wlan0", searchDomains: ["lan", "corp.example"]))
        #expect(office.rule == 2 && office.action == .connect && office.matched == ["interface": "wlan0", "search_domain": "corp.example"])
        let wifi = TrustedEvaluator.verdict(rules, NetworkFacts(interface: "wlp2s0", searchDomains: ["lan"]))
        #expect(wifi.rule == 3 && wifi.action == .block)
        #expect(TrustedEvaluator.verdict(rules, NetworkFacts(interface: "eth1", ssid: "Cafe")).rule == 4)
        // Unknown facts match nothing: no gateway MAC yet, offline.
        #expect(TrustedEvaluator.verdict(rules, NetworkFacts(interface: "eth0", gateway: "198.51.100.1")).action == .connect)
        #expect(TrustedEvaluator.verdict(rules, NetworkFacts()).action == .connect)
        #expect(TrustedEvaluator.verdict([], NetworkFacts(interface: "eth0")).action == .connect)
    }

    @Test func verdictsOnlyForProfilesWithRules() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.trusted = rules
        let policy = Policy(profiles: [work, profile("home", tunnel: "tun0", index: 2)])
        let verdicts = TrustedEvaluator.verdicts(policy, NetworkFacts(interface: "eth0", gatewayMAC: Self.home))
        #expect(verdicts.keys.sorted() == ["work"] && verdicts["work"]?.action == .disconnect)
    }

    func plan(_ action: TrustedAction?, killswitch: Bool = true, allowLAN: Bool = false) -> DesiredState {
        var work = profile("work", tunnel: "wg0", index: 1, killswitch: killswitch)
        work.allowLAN = allowLAN
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101],
                                 links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)])
        if let action { facts.trusted["work"] = TrustedVerdict(action: action, rule: 1) }
        return Planner.plan(Policy(profiles: [work]), facts: facts)
    }

    func routes(_ state: DesiredState) -> [String] {
        state.routes.filter { $0.table == 7301 && $0.destination.length == 0 }.map { route in
            switch route.kind {
            case .device(let index): return "dev \(index)"
            case .unreachable: return "unreachable"
            default: return "\(route.kind)"
            }
        }
    }

    func egress(_ state: DesiredState) -> [[NftStatement]] {
        state.nft.chain(named: "egress_work")?.rules.map(\.statements).filter { !$0.contains(.verdict(.jump("tunnel_transport"))) } ?? []
    }

    /// The tables members' DNS is routed to (empty: the host's resolver).
    func dns(_ state: DesiredState) -> [UInt32] { Array(Set(state.rules.filter { $0.destinationPorts == 53...53 }.map(\.table))) }

    @Test func connectIsTheTunnelAsWithoutRules() {
        #expect(plan(.connect) == plan(nil))
        #expect(routes(plan(.connect)) == ["dev 7", "unreachable", "dev 7", "unreachable"])
        #expect(egress(plan(.connect)).last == [.namedCounter("work_dropped"), .verdict(.drop)])
        #expect(dns(plan(.connect)) == [7301 + 131_072])
    }

    @Test func disconnectStepsAside() {
        let state = plan(.disconnect)
        // No route at all: members' lookups go on to the main table (direct).
        #expect(state.routes.filter { $0.table == 7301 }.isEmpty)
        #expect(!egress(state).contains { $0.contains(.verdict(.drop)) }, "no killswitch drop: \(egress(state))")
        #expect(state.nft.chain(named: "listen_work")?.rules.contains { $0.statements.contains(.verdict(.drop)) } == false)
        #expect(dns(state).isEmpty, "members' DNS is the host's")
        // Still marked (a flip back needs nothing new), and the rule to the table is there.
        #expect(state.rules.contains { $0.table == 7301 })
        #expect(plan(.disconnect, allowLAN: true).routes.filter { $0.table == 7301 }.isEmpty)
    }

    @Test func blockHoldsMembersEvenWithoutKillswitch() {
        for killswitch in [true, false] {
            let state = plan(.block, killswitch: killswitch)
            #expect(routes(state) == ["unreachable", "unreachable"], "only the unreachable route")
            #expect(egress(state).last == [.namedCounter("work_dropped"), .verdict(.drop)])
            #expect(!egress(state).contains { $0.contains(.namedCounter("work_tunnel")) }, "nothing accepted into the tunnel either")
            #expect(egress(plan(.connect, killswitch: killswitch)).contains { $0.contains(.namedCounter("work_tunnel")) })
            #expect(state.nft.chain(named: "listen_work")?.rules.last?.statements.contains(.verdict(.drop)) == true)
            #expect(dns(state) == [7301 + 131_072], "members' DNS still goes to the proxy, which is held too")
        }
        // allow_lan: the tunnel's own networks are unreachable, the LAN thrown as when the tunnel is down.
        let lan = plan(.block, allowLAN: true).routes.filter { $0.table == 7301 }
        #expect(!lan.contains { if case .device = $0.kind { return true } else { return false } })
        #expect(lan.contains { $0.kind == .fallThrough })
    }

    /// nft itself checks each action's table (a counter used but not declared, say).
    @Test func nftAcceptsEveryAction() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())tn", cleanup: cleanup)
        for action in TrustedAction.allCases {
            for (killswitch, allowLAN) in [(true, false), (false, true)] {
                var work = profile("work", tunnel: "wg0", index: 1, killswitch: killswitch)
                work.allowLAN = allowLAN
                var facts = RuntimeFacts()
                facts.trusted["work"] = TrustedVerdict(action: action, rule: 1)
                for system in [nil, "work"] {
                    let policy = Policy(profiles: [work], system: SystemSettings(profile: system))
                    try NftCLI.apply(PlanText.render(Planner.plan(policy, facts: facts)), in: namespace, checkOnly: true)
                }
            }
        }
    }
}
