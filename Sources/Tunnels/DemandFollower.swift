import Control
import Monotonic
import Policy
import WireGuardDevice

/// on_demand, idle and `vpnctl up/down PROFILE` for built-in tunnels: vpnd tells each
/// on-demand tunnel whether its profile has members (a launch, a unit or app scope joining,
/// a route.executables program placed), so the handshake starts before the first packet;
/// the first packet routed into the tunnel brings it up by itself. The member counts and
/// the clock are given: the daemon reads the cgroups and the time, this decides.
public enum DemandFollower {
    /// The settings each built-in tunnel runs with, by interface.
    public static func settings(_ policy: Policy) -> [String: TunnelDemand.Settings] {
        var settings: [String: TunnelDemand.Settings] = [:]
        for profile in policy.profiles where profile.tunnel.isBuiltIn {
            guard let onDemand = profile.onDemand else { continue }
            settings[profile.tunnel.interfaceName] = TunnelDemand.Settings(
                onDemand: true, idle: onDemand.idle.map { MonotonicInstant.Duration(nanoseconds: $0.milliseconds * 1_000_000) })
        }
        return settings
    }

    /// The profiles whose members are followed (`only`: the one a process just joined), in
    /// the order they are looked at: a running multihop exit counts as a member of its entry
    /// (MultihopDemand), so exits come before their entries.
    public static func followed(_ policy: Policy, only: Profile? = nil) -> [Profile] {
        (only.map { [$0] } ?? MultihopDemand.exitsFirst(policy)).filter { $0.tunnel.isBuiltIn && $0.onDemand != nil }
    }

    /// Tells each followed tunnel whether it has members now (after every apply: each cgroup
    /// change, each launch, and once a second). `members`: each followed profile's process
    /// count, by name.
    public static func follow(_ policy: Policy, only: Profile? = nil, members: [String: Int], tunnels: some DemandTarget, now: MonotonicInstant) {
        for profile in followed(policy, only: only) {
            let present = (members[profile.name] ?? 0) > 0
            let exit = !present && MultihopDemand.exitRuns(through: profile, in: policy) { tunnels.demandState(interface: $0)?.isRunning ?? false }
            tunnels.membersChanged(interface: profile.tunnel.interfaceName, present: present || exit, why: present ? .member : .exit, now: now)
        }
    }

    /// The status of a built-in tunnel's demand machine: its times on the wall clock, from
    /// the monotonic instants the machine keeps.
    public static func status(_ profile: Profile, state: TunnelDemand?, now: MonotonicInstant, wall: WallClock) -> TunnelDemandStatus? {
        guard profile.tunnel.isBuiltIn, let state else { return nil }
        let age = now.since(state.since)
        let idleLeft = state.idleDeadline.map { $0.since(now) }
        return TunnelDemandStatus(state: state.phase.token, since: (wall.secondsSinceEpoch - seconds(age)).rounded(), reason: state.why,
                                  onDemand: state.settings.onDemand, idleSeconds: state.settings.idle.map(seconds),
                                  idleLeft: idleLeft.map { seconds($0).rounded(.up) }, held: state.hold?.rawValue)
    }

    private static func seconds(_ duration: MonotonicInstant.Duration) -> Double { Double(duration.nanoseconds) / 1e9 }
}
