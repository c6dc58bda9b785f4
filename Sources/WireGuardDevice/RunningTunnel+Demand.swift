import Monotonic
import WireGuard

/// What the tunnel's owner (vpnd) tells it about demand, and reads back for status. Any
/// thread: the machine is behind its own lock. The owner reads the clock (`now`), so its
/// decisions are stepped in tests as the machine's are.
extension RunningTunnel {
    /// The demand machine as it is now (phase, since, reason, hold, idle countdown).
    public var demandState: TunnelDemand { demand.snapshot }

    /// The profile's members appeared or went: with on_demand, the first member starts the
    /// handshake before its first packet.
    public func membersChanged(present: Bool, why: TunnelDemand.Reason = .member, now: MonotonicInstant) { demand.membersChanged(present: present, now: now, why: why) }

    /// `vpnctl up`: up now, and kept up (no idle teardown) until `holdDown` or `releaseHold`.
    public func holdUp(now: MonotonicInstant) { demand.holdUp(now: now) }

    /// `vpnctl down`: down now, and no handshake even with traffic, until `holdUp` or `releaseHold`.
    public func holdDown(now: MonotonicInstant) { demand.holdDown(now: now) }

    /// A reload: the tunnel follows its settings again.
    public func releaseHold(now: MonotonicInstant) { demand.release(now: now) }
}
