import Addresses
import Monotonic
import Plan
import Policy
import ServiceSupport
import Testing
import TrustedNetworks

/// Trusted networks as vpnd's part, the clocks stepped in milliseconds: the host's networks
/// read (a source the test sets) and evaluated as FactsReader does, each profile's flip
/// logged once with its rule and values, its "since" kept while the action is the same, and
/// a gateway without a known address looked at again once, 200 ms on. The real networks are
/// proven in namespaces (TrustedNetworkTests, TrustedBuiltInTunnelTests,
/// MultihopTrustedNetworkTests).
@Suite struct TrustedNetworksTests {
    static let here = SourceLocation(file: "/p/t.toml", line: 3, column: 5)
    static let home = "02:00:5e:00:53:0a"
    static let atHome = NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: home)
    static let office = NetworkFacts(interface: "eth0", gateway: "203.0.113.1", gatewayMAC: "02:00:5e:00:53:0b", searchDomains: ["corp.example"])
    static let cafe = NetworkFacts(interface: "wlan0", gateway: "192.0.2.1", gatewayMAC: "02:00:5e:00:53:0c", ssid: "Cafe")
    static let elsewhere = NetworkFacts(interface: "eth0", gateway: "192.0.2.1", gatewayMAC: "02:00:5e:00:53:0d")

    final class Networks: NetworkSource {
        var now = NetworkFacts()
        func read() -> NetworkFacts { now }
    }

    static func policy(_ rules: [TrustedRule]) -> Policy {
        var work = Profile(name: "work", location: here, tunnel: .interface("wg0"), access: Access(users: [], groups: [], location: here),
                           killswitch: true, index: 1, table: 7301)
        work.trusted = rules
        let home = Profile(name: "home", location: here, tunnel: .interface("tun0"), access: Access(users: [], groups: [], location: here),
                           killswitch: true, index: 2, table: 7302)
        return Policy(profiles: [work, home])
    }

    static let rules = [
        TrustedRule(match: TrustedMatch(gatewayMAC: home), action: .disconnect, location: here),
        TrustedRule(match: TrustedMatch(searchDomain: "corp.example"), action: .disconnect, location: here),
        TrustedRule(match: TrustedMatch(ssid: "Cafe"), action: .block, location: here),
    ]

    static func monotonic(_ milliseconds: UInt64) -> MonotonicInstant { MonotonicInstant(nanoseconds: 9_000_000_000 + milliseconds * 1_000_000) }
    static func wall(_ milliseconds: Int64) -> WallClock { WallClock(seconds: 1_700_000_000 + milliseconds / 1000, nanoseconds: Int32(milliseconds % 1000) * 1_000_000) }

    /// One pass as vpnd makes it: the networks read with the facts, evaluated (FactsReader),
    /// applied, and the flips the part logged.
    static func pass(_ part: TrustedNetworks, _ policy: Policy, at milliseconds: UInt64) -> [String] {
        var facts = RuntimeFacts()
        facts.trusted = TrustedEvaluator.verdicts(policy, part.read(now: monotonic(milliseconds)))
        return part.applied(facts: facts, policy: policy, wall: wall(Int64(milliseconds)))
    }

    @Test func aFlipIsLoggedOnce() throws {
        let networks = Networks(), part = TrustedNetworks(source: networks, log: Log(minimum: .error))
        let policy = Self.policy(Self.rules)
        let work = try #require(policy.profile(named: "work"))
        #expect(part.status(work, wall: Self.wall(0))?.action == "connect", "before any pass: connect, since now")
        #expect(part.status(work, wall: Self.wall(0))?.since == Self.wall(0).secondsSinceEpoch)
        networks.now = Self.atHome
        #expect(Self.pass(part, policy, at: 0) == [
            "trusted networks: profile work disconnects, members go direct (no tunnel, no killswitch): rule 1 (/p/t.toml:3:5): gateway_mac = \(Self.home) (gateway 198.51.100.1); default route eth0 via 198.51.100.1 (\(Self.home))",
        ])
        #expect(Self.pass(part, policy, at: 1000).isEmpty, "the same verdict a second later: nothing said")
        #expect(Self.pass(part, policy, at: 2000).isEmpty)
        let status = try #require(part.status(work, wall: Self.wall(2000)))
        #expect(status.action == "disconnect" && status.rule == 1 && status.since == Self.wall(0).secondsSinceEpoch && status.network == Self.atHome)
        #expect(part.action(of: "work") == .disconnect && part.action(of: "home") == nil)
        #expect(part.status(try #require(policy.profile(named: "home")), wall: Self.wall(2000)) == nil, "a profile without rules has no trusted status")
    }

    @Test func theSameActionByAnotherRuleKeepsItsSince() throws {
        let networks = Networks(), part = TrustedNetworks(source: networks, log: Log(minimum: .error))
        let policy = Self.policy(Self.rules)
        let work = try #require(policy.profile(named: "work"))
        networks.now = Self.atHome
        #expect(Self.pass(part, policy, at: 1000).count == 1)
        networks.now = Self.office
        let said = Self.pass(part, policy, at: 5000)
        #expect(said.count == 1 && said[0].contains("disconnects") && said[0].contains("rule 2"), "another rule is said: \(said)")
        #expect(part.status(work, wall: Self.wall(5000))?.rule == 2)
        #expect(part.status(work, wall: Self.wall(5000))?.since == Self.wall(1000).secondsSinceEpoch, "still disconnected since the first")
        networks.now = Self.elsewhere
        #expect(Self.pass(part, policy, at: 7500).first?.hasPrefix("trusted networks: profile work connects, through its tunnel: no rule matched") == true)
        #expect(part.status(work, wall: Self.wall(9000))?.since == Self.wall(7500).secondsSinceEpoch, "another action: a new since")
    }

    @Test func aNetworkChangeIsEvaluatedAgainAndAGoneProfileForgotten() throws {
        let networks = Networks(), part = TrustedNetworks(source: networks, log: Log(minimum: .error))
        let policy = Self.policy(Self.rules)
        networks.now = Self.elsewhere
        #expect(Self.pass(part, policy, at: 0).count == 1, "the first verdict, connect, is said")
        #expect(part.action(of: "work") == .connect)
        networks.now = Self.cafe
        let blocked = Self.pass(part, policy, at: 250)
        #expect(blocked == ["trusted networks: profile work blocks, members held (killswitch, nothing through the tunnel or direct): rule 3 (/p/t.toml:3:5): ssid = Cafe; default route wlan0 via 192.0.2.1 (02:00:5e:00:53:0c), SSID \"Cafe\""])
        #expect(part.action(of: "work") == .block && part.network == Self.cafe)
        networks.now = Self.atHome
        #expect(Self.pass(part, policy, at: 500).first?.contains("work disconnects") == true)
        // The profile gone from the policy: its verdict is forgotten.
        let without = Policy(profiles: policy.profiles.filter { $0.name != "work" })
        #expect(Self.pass(part, without, at: 750).isEmpty)
        #expect(part.action(of: "work") == nil)
    }

    @Test func aGatewayWithoutAnAddressIsLookedAtAgainOnce() {
        let networks = Networks(), part = TrustedNetworks(source: networks, log: Log(minimum: .error))
        #expect(part.takeRelook() == nil, "nothing read, nothing asked")
        networks.now = NetworkFacts(interface: "eth0", gateway: "198.51.100.1")
        _ = part.read(now: Self.monotonic(0))
        #expect(part.takeRelook() == Self.monotonic(200), "asked 200 ms on")
        #expect(part.takeRelook() == nil, "taken once")
        // Read again, and again while the answer is still out (a pass reads up to four times).
        _ = part.read(now: Self.monotonic(0))
        _ = part.read(now: Self.monotonic(50))
        _ = part.read(now: Self.monotonic(200))
        #expect(part.takeRelook() == nil, "the same gateway is not asked about twice")
        networks.now = NetworkFacts(interface: "eth1", gateway: "198.51.100.1")
        _ = part.read(now: Self.monotonic(300))
        #expect(part.takeRelook() == Self.monotonic(500), "the same address on another interface is another gateway")
        networks.now = Self.atHome
        _ = part.read(now: Self.monotonic(500))
        #expect(part.takeRelook() == nil, "resolved: nothing to look at")
        networks.now = NetworkFacts(interface: "eth0", gateway: "198.51.100.1")
        _ = part.read(now: Self.monotonic(60_000))
        #expect(part.takeRelook() == Self.monotonic(60_200), "its entry gone later: asked again")
    }
}
