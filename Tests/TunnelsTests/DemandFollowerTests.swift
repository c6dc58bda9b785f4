import Control
import Monotonic
import Policy
import Testing
import TrustedFiles
import WireGuardDevice
@testable import Tunnels

/// on_demand and idle as the part decides them: member counts and the clock given, the
/// tunnels' demand machines (TunnelDemand) stepped by the test, status read in between.
@Suite struct DemandFollowerTests {
    /// The machines alone, as BuiltInTunnels' running tunnels hold them.
    final class Machines: DemandTarget {
        var machines: [String: TunnelDemand] = [:]

        init(_ policy: Policy, now: MonotonicInstant) {
            let settings = DemandFollower.settings(policy)
            for profile in policy.profiles where profile.tunnel.isBuiltIn {
                machines[profile.tunnel.interfaceName] = TunnelDemand(settings: settings[profile.tunnel.interfaceName] ?? .alwaysUp, now: now)
            }
        }

        func demandState(interface: String) -> TunnelDemand? { machines[interface] }

        func membersChanged(interface: String, present: Bool, why: TunnelDemand.Reason, now: MonotonicInstant) {
            _ = machines[interface]?.membersChanged(present: present, now: now, why: why)
        }

        /// What the device's timer does every ~100 ms.
        func tick(_ now: MonotonicInstant) {
            for interface in machines.keys { _ = machines[interface]?.tick(now: now) }
        }
    }

    static let policy = try! Policy.parse([PolicySource(path: "/p/10.toml", text: """
        [profile.work]
        tunnel = { wireguard = "/etc/vpnexec/work.conf", interface = "wg-work" }
        on_demand = true
        idle = "30s"
        [profile.home]
        tunnel = { wireguard = "/etc/vpnexec/home.conf", interface = "wg-home" }
        [profile.entry]
        tunnel = { wireguard = "/etc/vpnexec/entry.conf", interface = "wg-entry" }
        on_demand = true
        idle = "3s"
        [profile.exit]
        tunnel = { wireguard = "/etc/vpnexec/exit.conf", interface = "wg-exit", via = "entry" }
        on_demand = true
        idle = "3s"
        """)], resolver: SystemNameResolver())
    let start = MonotonicInstant.seconds(1000)
    let wall = WallClock(seconds: 1_700_000_000, nanoseconds: 0)

    func at(_ ms: UInt64) -> MonotonicInstant { start + .milliseconds(ms) }
    func wall(_ ms: UInt64) -> WallClock { WallClock(seconds: wall.seconds + Int64(ms / 1000), nanoseconds: Int32(ms % 1000) * 1_000_000) }
    func profile(_ name: String) -> Profile { Self.policy.profile(named: name)! }

    @Test func onDemandProfilesGetTheirSettingsAndAlwaysUpOnesNone() {
        let settings = DemandFollower.settings(Self.policy)
        #expect(settings["wg-work"] == TunnelDemand.Settings(onDemand: true, idle: .seconds(30)))
        #expect(settings["wg-home"] == nil)
        #expect(DemandFollower.followed(Self.policy).map(\.name) == ["exit", "work", "entry"], "exits before their entries")
    }

    /// A member brings the tunnel up; gone, the idle countdown runs from then, and status
    /// counts it down; at its end the tunnel goes down.
    @Test func aMemberBringsItUpAndIdleTakesItDownAsStatusCountsDown() throws {
        let tunnels = Machines(Self.policy, now: start)
        let down = try #require(DemandFollower.status(profile("work"), state: tunnels.demandState(interface: "wg-work"), now: at(500), wall: wall(500)))
        #expect(down.state == "down-on-demand" && down.onDemand && down.idleSeconds == 30 && down.idleLeft == nil)
        DemandFollower.follow(Self.policy, members: ["work": 1], tunnels: tunnels, now: at(1000))
        #expect(tunnels.machines["wg-work"]?.phase == .connecting && tunnels.machines["wg-work"]?.reason == .member)
        tunnels.machines["wg-work"]?.handshakeCompleted(now: at(1200))
        DemandFollower.follow(Self.policy, members: ["work": 1], tunnels: tunnels, now: at(2000))
        let up = try #require(DemandFollower.status(profile("work"), state: tunnels.demandState(interface: "wg-work"), now: at(5000), wall: wall(5000)))
        #expect(up.state == "up" && up.since == Double(wall.seconds + 1) && up.idleLeft == nil, "\(up)")
        // The last member leaves at 10 s: down at 40 s, not before.
        DemandFollower.follow(Self.policy, members: ["work": 0], tunnels: tunnels, now: at(10_000))
        let counting = try #require(DemandFollower.status(profile("work"), state: tunnels.demandState(interface: "wg-work"), now: at(25_000), wall: wall(25_000)))
        #expect(counting.state == "up" && counting.idleLeft == 15)
        tunnels.tick(at(39_900))
        #expect(tunnels.machines["wg-work"]?.phase == .up)
        tunnels.tick(at(40_000))
        let idle = try #require(DemandFollower.status(profile("work"), state: tunnels.demandState(interface: "wg-work"), now: at(41_000), wall: wall(41_000)))
        #expect(idle.state == "down-on-demand" && idle.reason == TunnelDemand.Reason.idle.rawValue && idle.since == Double(wall.seconds + 40))
        // Always up: never told, no settings of demand.
        #expect(tunnels.machines["wg-home"]?.phase == .connecting && tunnels.machines["wg-home"]?.settings == .alwaysUp)
    }

    /// A multihop exit's members bring the exit up, and in the same pass its entry (the exit
    /// is looked at first); the entry idles only once the exit has gone down.
    @Test func aRunningExitKeepsItsEntryUp() {
        let tunnels = Machines(Self.policy, now: start)
        DemandFollower.follow(Self.policy, members: ["exit": 2], tunnels: tunnels, now: at(1000))
        #expect(tunnels.machines["wg-exit"]?.phase == .connecting)
        #expect(tunnels.machines["wg-entry"]?.phase == .connecting && tunnels.machines["wg-entry"]?.reason == .exit)
        // The exit's members leave: it idles 3 s, and its entry with it only after that.
        DemandFollower.follow(Self.policy, members: [:], tunnels: tunnels, now: at(2000))
        for ms in stride(from: UInt64(2100), through: 4900, by: 100) {
            tunnels.tick(at(ms))
            DemandFollower.follow(Self.policy, members: [:], tunnels: tunnels, now: at(ms))
        }
        #expect(tunnels.machines["wg-exit"]?.phase == .connecting && tunnels.machines["wg-entry"]?.phase == .connecting)
        tunnels.tick(at(5000))
        DemandFollower.follow(Self.policy, members: [:], tunnels: tunnels, now: at(5000))
        #expect(tunnels.machines["wg-exit"]?.phase == .downOnDemand && tunnels.machines["wg-entry"]?.phase == .connecting)
        tunnels.tick(at(7900))
        #expect(tunnels.machines["wg-entry"]?.phase == .connecting)
        tunnels.tick(at(8000))
        #expect(tunnels.machines["wg-entry"]?.phase == .downOnDemand)
    }

    /// `only`: a process joined one profile (a launch); the others are not looked at.
    @Test func aJoinLooksAtItsProfileAlone() {
        let tunnels = Machines(Self.policy, now: start)
        DemandFollower.follow(Self.policy, only: profile("work"), members: ["work": 1, "entry": 1], tunnels: tunnels, now: at(1))
        #expect(tunnels.machines["wg-work"]?.phase == .connecting && tunnels.machines["wg-entry"]?.phase == .downOnDemand)
    }
}
