/// What vpnd adds to its answer to a launch (vpnexec), for the warnings vpnexec prints before
/// it execs: where the profile's members are, and the profile's tunnel when it carries
/// nothing now. An older vpnd's answer has none (and vpnexec warns of nothing then).
public struct LaunchReport: Codable, Hashable, Sendable {
    /// The profile's member cgroups, its own and those that joined it, as /proc/PID/cgroup
    /// names them (without the leading "/"): a process in one of them, or below, is in the
    /// profile.
    public var cgroups: [String]
    /// Set while the profile's killswitch holds its members because the tunnel is not
    /// there: they get nothing through it, and nothing leaves outside it.
    public var heldTunnel: HeldTunnel?

    public init(cgroups: [String], heldTunnel: HeldTunnel? = nil) {
        self.cgroups = cgroups
        self.heldTunnel = heldTunnel
    }

    /// Whether a process in `cgroup` (as /proc/PID/cgroup names it) is in the profile.
    public func holds(cgroup: String) -> Bool {
        let path = cgroup.hasPrefix("/") ? String(cgroup.dropFirst()) : cgroup
        return cgroups.contains { path == $0 || path.hasPrefix($0 + "/") }
    }
}

/// A profile's tunnel that holds its members, and why.
public struct HeldTunnel: Codable, Hashable, Sendable {
    public var interface: String
    /// `missing` (no such interface: the profile's table has only its unreachable route),
    /// `down` (the interface exists, administratively down or without carrier) or
    /// `held-down` (a built-in tunnel `vpnctl down PROFILE` holds down: packets into it are
    /// dropped) or `blocked` (a trusted-network rule blocks the profile on the host's network
    /// now: nothing through the tunnel or direct).
    public var state: String

    public static let missing = "missing"
    public static let down = "down"
    public static let heldDown = "held-down"
    public static let blocked = "blocked"

    public init(interface: String, state: String) {
        self.interface = interface
        self.state = state
    }
}
