import WireGuard

/// What the tunnel's owner (vpnd) tells it about demand, and reads back for status. Any
/// thread: the machine is behind its own lock.
extension RunningTunnel {
    /// The demand machine as it is now (phase, since, reason, hold, idle countdown).
    public var demandState: TunnelDemand { demand.snapshot }

    /// The profile's members appeared or went: with on_demand, the first member starts the
    /// handshake before its first packet.
    public func membersChanged(present: Bool, why: TunnelDemand.Reason = .member) { demand.membersChanged(present: present, now: now(), why: why) }

    /// `vpnctl up`: up now, and kept up (no idle teardown) until `holdDown` or `releaseHold`.
    public func holdUp() { demand.holdUp(now: now()) }

    /// `vpnctl down`: down now, and no handshake even with traffic, until `holdUp` or `releaseHold`.
    public func holdDown() { demand.holdDown(now: now()) }

    /// A reload: the tunnel follows its settings again.
    public func releaseHold() { demand.release(now: now()) }
}
