import Control
import Glibc
import Monotonic
import Policy
import WireGuard
import WireGuardDevice

/// on_demand, idle and `vpnctl up/down PROFILE` for built-in tunnels: vpnd tells each
/// on-demand tunnel whether its profile has members (a launch, a unit or app scope joining,
/// a route.executables program placed), so the handshake starts before the first packet;
/// the first packet routed into the tunnel brings it up by itself.
extension Daemon {
    /// The settings each built-in tunnel runs with, by interface.
    var demandSettings: [String: TunnelDemand.Settings] {
        var settings: [String: TunnelDemand.Settings] = [:]
        for profile in policy.profiles where profile.tunnel.isBuiltIn {
            guard let onDemand = profile.onDemand else { continue }
            settings[profile.tunnel.interfaceName] = TunnelDemand.Settings(
                onDemand: true, idle: onDemand.idle.map { MonotonicInstant.Duration(nanoseconds: $0.milliseconds * 1_000_000) })
        }
        return settings
    }

    /// Members of on-demand profiles, as the cgroups hold them now (after every apply: each
    /// cgroup change, each launch, and once a second). A running multihop exit counts as a
    /// member of its entry (MultihopDemand), so exits are looked at before their entries.
    func followDemand(_ only: Profile? = nil) {
        for profile in only.map({ [$0] }) ?? MultihopDemand.exitsFirst(policy) where profile.tunnel.isBuiltIn && profile.onDemand != nil {
            let members = memberCount(of: profile) > 0
            let exit = !members && MultihopDemand.exitRuns(through: profile, in: policy) { tunnels.demandState(interface: $0)?.isRunning ?? false }
            tunnels.membersChanged(interface: profile.tunnel.interfaceName, present: members || exit, why: members ? .member : .exit)
        }
    }

    /// The processes in the profile's cgroup and in those that joined it.
    func memberCount(of profile: Profile) -> Int {
        reconciler.memberCgroups(of: profile, parent: options.cgroupParent).reduce(0) { $0 + hierarchy.processes(in: $1).count }
    }

    /// The status of a built-in tunnel's demand machine, with wall-clock times.
    func demandStatus(_ profile: Profile) -> TunnelDemandStatus? {
        guard profile.tunnel.isBuiltIn, let state = tunnels.demandState(interface: profile.tunnel.interfaceName) else { return nil }
        let now = MonotonicInstant.now().nanoseconds
        let wallNow = WallClock.now().secondsSinceEpoch
        let age = Double(now &- min(state.since.nanoseconds, now)) / 1e9
        let idleLeft = state.idleDeadline.map { Double($0.nanoseconds > now ? $0.nanoseconds - now : 0) / 1e9 }
        return TunnelDemandStatus(state: state.phase.token, since: (wallNow - age).rounded(), reason: state.why,
                                  onDemand: state.settings.onDemand, idleSeconds: state.settings.idle.map { Double($0.nanoseconds) / 1e9 },
                                  idleLeft: idleLeft.map { $0.rounded(.up) }, held: state.hold?.rawValue)
    }
}
