/// What confines vpnd itself (Landlock), in a status for root.
public struct SandboxStatus: Codable, Hashable, Sendable, CustomStringConvertible {
    /// Landlock is in force, and vpnd checked it took (its own /proc/self/comm cannot be
    /// opened for writing).
    public static let confined = "confined"
    /// Landlock was applied but the check found it not in force.
    public static let notInForce = "not-in-force"
    /// The kernel has no Landlock, or it is not enabled at boot (`reason` says which).
    public static let unavailable = "unavailable"
    /// vpnd was started without a sandbox (`--no-sandbox`, `--oneshot`).
    public static let off = "off"

    /// One of the four above.
    public var state: String
    /// The Landlock ABI version in force (nil: none).
    public var landlockABI: Int?
    /// The only places vpnd may write, make or remove files.
    public var writablePaths: [String]
    /// The only TCP ports vpnd may connect to (Landlock ABI 4 and later; nil: TCP is not
    /// confined).
    public var tcpConnectPorts: [UInt16]?
    /// Why Landlock is unavailable or not in force.
    public var reason: String?

    public init(state: String, landlockABI: Int? = nil, writablePaths: [String] = [], tcpConnectPorts: [UInt16]? = nil, reason: String? = nil) {
        self.state = state
        self.landlockABI = landlockABI
        self.writablePaths = writablePaths
        self.tcpConnectPorts = tcpConnectPorts
        self.reason = reason
    }

    /// For vpnd's log and `vpnctl status`: "Landlock ABI 4: writes only in ...; no program
    /// execution; TCP only to connect to port 53 (DNS) (verified)".
    public var description: String {
        guard let abi = landlockABI else {
            return state == Self.off ? "off" : "not available (\(reason ?? "?")): file system writes are not confined"
        }
        var text = "Landlock ABI \(abi): writes only in \(writablePaths.joined(separator: ", ")); no program execution"
        if let ports = tcpConnectPorts {
            text += ports.isEmpty ? "; no TCP" : "; TCP only to connect to port \(ports.map(String.init).joined(separator: ", ")) (DNS)"
        }
        return text + (state == Self.confined ? " (verified)" : " (NOT in force: \(reason ?? "?"))")
    }
}

/// A cgroup whose sockets are born with a mark of ours (its socket programs are in the
/// kernel), or that should be and is held because the kernel refused its programs.
public struct BirthMarkReport: Codable, Hashable, Sendable {
    /// Its sockets are born with `mark`.
    public static let marked = "marked"
    /// The kernel does not have its programs: held (see `heldCgroups`).
    public static let held = "held"

    /// Relative to the cgroup2 root.
    public var cgroup: String
    /// The profile whose mark its sockets carry (nil: the bypass slice's, or a held cgroup
    /// of no profile).
    public var profile: String?
    /// `marked` or `held`.
    public var state: String
    /// The mark its sockets are born with, as marks are written ("0x1000000"); nil while held.
    public var mark: String?

    public init(cgroup: String, profile: String?, state: String, mark: String?) {
        self.cgroup = cgroup
        self.profile = profile
        self.state = state
        self.mark = mark
    }
}

/// How members' DNS queries (UDP and TCP port 53) reach their profiles' proxies: routed to
/// a steering address on this host, or refused when that could not be set up.
public struct DNSSteeringStatus: Codable, Hashable, Sendable {
    /// Queries are routed to `addresses`.
    public static let routed = "routed"
    /// No steering point: members' queries are refused on this host (`failure` says why).
    public static let off = "off"

    /// `routed` or `off`.
    public var state: String
    /// Where the queries are routed to (127.77.0.0, and fd7f:4d:: unless IPv6 is off on lo).
    public var addresses: [String]
    /// How many profiles' proxies are served there.
    public var profiles: Int
    /// IPv6 is off on lo: members' IPv6 queries are refused, not routed.
    public var ipv6Refused: Bool
    /// Why there is no steering point.
    public var failure: String?

    public init(state: String, addresses: [String], profiles: Int, ipv6Refused: Bool = false, failure: String? = nil) {
        self.state = state
        self.addresses = addresses
        self.profiles = profiles
        self.ipv6Refused = ipv6Refused
        self.failure = failure
    }
}

/// The last time vpnd read and applied its policy (its start counts as the first).
public struct ReloadStatus: Codable, Hashable, Sendable {
    /// The new policy is in force.
    public static let applied = "applied"
    /// The policy did not load (an error in a file): nothing changed.
    public static let refused = "refused"
    /// Applying failed: the previous policy is in force again.
    public static let failed = "failed"

    /// `applied`, `refused` or `failed`.
    public var outcome: String
    /// When, in seconds since the epoch.
    public var time: Double
    /// When the policy in force was applied (the last `applied`), in seconds since the epoch.
    public var lastApplied: Double

    public init(outcome: String, time: Double, lastApplied: Double) {
        self.outcome = outcome
        self.time = time
        self.lastApplied = lastApplied
    }

    /// A start that applied its policy.
    public static func started(at time: Double) -> ReloadStatus {
        ReloadStatus(outcome: applied, time: time, lastApplied: time)
    }

    /// This record after a reload with `outcome` at `time`.
    public func after(_ outcome: String, at time: Double) -> ReloadStatus {
        ReloadStatus(outcome: outcome, time: time, lastApplied: outcome == Self.applied ? time : lastApplied)
    }
}

/// How many addresses each of a profile's domain sets holds now, by kind and family: only
/// the sets the profile has (bypass and tunneled with `bypass.domains`, route with
/// `route.domains`).
public struct DomainSetSizes: Codable, Hashable, Sendable {
    /// Addresses of bypassed names: members reach them directly.
    public var bypass4: Int?
    public var bypass6: Int?
    /// Addresses a bypassed name shares with one that is not: kept in the tunnel.
    public var tunneled4: Int?
    public var tunneled6: Int?
    /// Addresses of `route.domains` names: anyone's new connections go through the tunnel.
    public var route4: Int?
    public var route6: Int?

    public init(bypass4: Int? = nil, bypass6: Int? = nil, tunneled4: Int? = nil, tunneled6: Int? = nil, route4: Int? = nil, route6: Int? = nil) {
        self.bypass4 = bypass4
        self.bypass6 = bypass6
        self.tunneled4 = tunneled4
        self.tunneled6 = tunneled6
        self.route4 = route4
        self.route6 = route6
    }

    /// The sets the profile has, by their names in the status ("bypass4", ...), in that order.
    public var named: [(String, Int)] {
        [("bypass4", bypass4), ("bypass6", bypass6), ("tunneled4", tunneled4), ("tunneled6", tunneled6),
         ("route4", route4), ("route6", route6)].compactMap { name, size in size.map { (name, $0) } }
    }
}
