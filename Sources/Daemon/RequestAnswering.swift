import Control
import Launch
import Policy
import Routing

/// What only the running daemon knows, as the request handler asks it: status, reload, down,
/// the links, its tunnels. The daemon conforms (as it takes the reconciler's PassSteps); a
/// test's fake conforms instead (RequestHandlerTests), so the handler's decisions are tested
/// without a daemon.
protocol RequestAnswering: AnyObject {
    func status() throws -> StatusReport
    func reload() -> ControlResponse
    /// Everything of ours out of the kernel, then vpnd exits.
    func down() throws -> ControlResponse
    /// The interfaces now (a profile's tunnel up, down or missing).
    func links() throws -> [Link]
    /// A built-in tunnel held up or down; false if it is not running.
    func hold(interface: String, up: Bool) -> Bool
    /// A process joined the profile (on-demand tunnels come up for it).
    func joined(_ profile: Profile)
    /// The profile's tunnel, when its killswitch holds members because it is not there
    /// (LaunchTunnel).
    func heldTunnel(_ profile: Profile) -> HeldTunnel?
    /// What the kernel does with the traffic of a process of `uid` in `cgroup` (Daemon+Explain).
    func explain(cgroup: String, pid: Int32?, uid: UInt32) throws -> Explanation
}

extension RequestAnswering {
    func explain(cgroup: String, pid: Int32?, uid: UInt32) throws -> Explanation {
        throw RequestFailure("this vpnd cannot explain")
    }
}
