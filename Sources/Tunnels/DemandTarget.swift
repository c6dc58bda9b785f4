import Monotonic
import WireGuardDevice

/// What DemandFollower reads and tells of the tunnels: BuiltInTunnels, whose running
/// tunnels each keep a TunnelDemand machine; in tests, the machines alone.
public protocol DemandTarget {
    /// nil: no such tunnel runs.
    func demandState(interface: String) -> TunnelDemand?
    func membersChanged(interface: String, present: Bool, why: TunnelDemand.Reason, now: MonotonicInstant)
}
