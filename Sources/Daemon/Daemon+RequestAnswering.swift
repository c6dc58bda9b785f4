import Control
import Launch
import Monotonic
import Policy
import Routing
import Tunnels

/// The daemon's part of the requests' answers: each a call into the part that knows, the
/// clock read once per request here, at the edge.
extension Daemon: RequestAnswering {
    func status() throws -> StatusReport { try statusReport() }

    func links() throws -> [Link] { try rtnl.links() }

    func hold(interface: String, up: Bool) -> Bool { tunnels.hold(interface: interface, up: up, now: .now()) }

    func joined(_ profile: Profile) { followDemand(profile, now: .now()) }

    func heldTunnel(_ profile: Profile) -> HeldTunnel? {
        let interface = profile.tunnel.interfaceName
        return LaunchTunnel.held(profile, phase: tunnels.demandState(interface: interface)?.phase, trusted: trusted.action(of: profile.name)) {
            try rtnl.link(named: interface)
        }
    }

    func explain(cgroup: String, pid: Int32?, uid: UInt32) throws -> Explanation {
        try explanation(cgroup: cgroup, pid: pid, uid: uid)
    }
}
