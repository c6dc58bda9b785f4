/// `vpnctl explain PID` / `vpnctl explain -p NAME`: what the kernel does with one process's
/// (or a profile's new process's) traffic now, read from the kernel by vpnd: its cgroup and
/// the rule that put it there, the mark its sockets are born with, the route and source
/// address a lookup with that mark gives, who answers its names, the killswitch.
public struct Explanation: Codable, Hashable, Sendable {
    /// Raised when a field changes meaning or goes away; new fields may appear without it.
    public static let currentSchema = 1
    /// `placement`'s values: a profile's own cgroup (vpnexec, vpnctl move, a
    /// route.executables rule); a cgroup systemd made that joined a profile where it stands
    /// (a user's vpn-NAME.slice, a listed app's scope); the bypass slice (vpnexec --bypass, a
    /// bypass.executables rule); system mode's profile (every process placed nowhere else);
    /// none of these.
    public static let profileCgroup = "profile", joined = "joined", bypass = "bypass", system = "system", outside = "outside"

    public var schema = Explanation.currentSchema
    /// The process (absent for a profile: what a process launched in it would get).
    public var pid: Int32?
    public var command: String?
    /// Relative to the cgroup2 root ("" is the root cgroup).
    public var cgroup: String
    public var placement: String
    public var profile: String?
    /// What put it there, in words, with the policy's file:line where there is one.
    public var rule: String
    /// The mark its sockets are born with ("0x1000000"), from the socket programs' settings
    /// of its cgroup or the nearest above it; absent: none (routed as the host's).
    public var mark: String?
    /// The cgroup whose programs give that mark; `held` when the kernel lacks them there.
    public var markFrom: String?
    public var held = false
    /// IPv4 then IPv6: where the kernel sends a packet with that mark now.
    public var routes: [ExplainedRoute] = []
    /// The profile's tunnel (absent outside the profiles).
    public var tunnel: TunnelStatus?
    public var killswitch: ExplainedKillswitch?
    public var dns: ExplainedDNS
    public var exceptions: ExplainedExceptions?
    /// Its network namespace, when it is not vpnd's (a container), or unknown.
    public var namespace: ExplainedNamespace?
    /// `--probe`'s connect (made by vpnctl, not vpnd).
    public var probe: ExplainedProbe?

    public init(pid: Int32?, cgroup: String, placement: String, rule: String, dns: ExplainedDNS) {
        self.pid = pid
        self.cgroup = cgroup
        self.placement = placement
        self.rule = rule
        self.dns = dns
    }
}

/// One route lookup (`ip route get DEST mark M`).
public struct ExplainedRoute: Codable, Hashable, Sendable {
    /// "ipv4" or "ipv6".
    public var family: String
    /// The address looked up (a documentation address unless asked otherwise).
    public var destination: String
    /// The interface it leaves by; absent: no route (unreachable, or refused by a rule).
    public var interface: String?
    public var source: String?
    public var gateway: String?
    /// It leaves by the profile's tunnel.
    public var throughTunnel = false

    public init(family: String, destination: String, interface: String?, source: String?, gateway: String?) {
        self.family = family
        self.destination = destination
        self.interface = interface
        self.source = source
        self.gateway = gateway
    }
}

public struct ExplainedKillswitch: Codable, Hashable, Sendable {
    public var enabled: Bool
    /// The tunnel's state (TunnelStatus.state).
    public var tunnelState: String
    /// Its traffic is dropped now (killswitch on, tunnel not up).
    public var holding: Bool

    public init(enabled: Bool, tunnelState: String, holding: Bool) {
        self.enabled = enabled
        self.tunnelState = tunnelState
        self.holding = holding
    }
}

public struct ExplainedDNS: Codable, Hashable, Sendable {
    /// `port53`'s values: the profile's proxy; refused by the proxy's absence (`failure`);
    /// the host's resolver (whatever /etc/resolv.conf names), not vpnd's.
    public static let proxy = "proxy", refused = "refused", host = "host"
    public var port53: String
    /// With `proxy`: the servers it asks, and where they came from (DNSStatus.serversFrom).
    public var servers: [String] = []
    public var serversFrom: String?
    public var failure: String?
    /// Its nss-resolve (systemd-resolved varlink) lookups: answered on this socket by the
    /// profile, or `namesNotFollowed` says why not.
    public var namesSocket: String?
    public var namesNotFollowed: String?

    public init(port53: String) {
        self.port53 = port53
    }
}

public struct ExplainedExceptions: Codable, Hashable, Sendable {
    public var allowLAN = false
    public var routeNetworks = 0
    public var bypassDomains = 0
    public var routeDomains = 0
    public var bypassExecutables = 0
    public var routeExecutables = 0

    public init() {}
}

public struct ExplainedNamespace: Codable, Hashable, Sendable {
    /// `state`'s values: routed into the tunnel by its veths, relayed by the process
    /// reading its TUN/TAP devices (`interfaces`, their names in it), held (dropped), or
    /// seen by vpnd as none of these (its traffic then is what its own routes make of it).
    public static let routed = "routed", relayed = "relayed", held = "held", unknown = "unknown"
    public var state: String
    public var namespaceID: Int32?
    public var interfaces: [String] = []
    public var reason: String?
    /// A relayed one's relay, where vpnd could tell which process it is.
    public var relay: RelayProcessReport?

    public init(state: String) {
        self.state = state
    }
}

/// `vpnctl explain -p NAME --probe HOST:PORT`: a TCP connect made by a process vpnd placed
/// in the profile (vpnexec), and the local address the kernel gave its socket.
public struct ExplainedProbe: Codable, Hashable, Sendable {
    public var target: String
    /// Absent when the probe did not get as far as a socket (vpnexec refused).
    public var localAddress: String?
    public var connected = false
    /// Why the connect or the probe failed.
    public var error: String?
    /// `localAddress` is one of the profile's tunnel's addresses.
    public var tunnelAddress = false

    public init(target: String) {
        self.target = target
    }
}
