import Nftables
import Policy
import Routing

/// Everything the kernel should hold for a policy: one nft table, policy rules, routes
/// in the profiles' tables and a few sysctls. The daemon's apply edge makes the kernel
/// match this value; `vpnctl plan` prints it.
public struct DesiredState: Hashable, Sendable {
    public var nft: NftTable
    public var rules: [RoutingRule]
    public var routes: [Route]
    public var sysctls: [Sysctl]
    /// Profile cgroups (relative to the cgroup2 root) that must exist.
    public var cgroups: [String]

    public init(nft: NftTable, rules: [RoutingRule], routes: [Route], sysctls: [Sysctl], cgroups: [String]) {
        self.nft = nft
        self.rules = rules
        self.routes = routes
        self.sysctls = sysctls
        self.cgroups = cgroups
    }
}

public struct Sysctl: Hashable, Sendable {
    /// Below /proc/sys, e.g. "net/ipv4/conf/all/src_valid_mark".
    public var path: String
    public var value: String

    public init(_ path: String, _ value: String) {
        self.path = path
        self.value = value
    }
}

/// What the planner needs to know about the machine right now.
public struct RuntimeFacts: Hashable, Sendable {
    /// Where profile cgroups live, relative to the cgroup2 root ("vpn.slice").
    public var cgroupParent: String
    /// Ids of the profile cgroups that exist, by relative path.
    public var cgroupIDs: [String: UInt64]
    /// Interfaces by name.
    public var links: [String: Link]

    public init(cgroupParent: String = "vpn.slice", cgroupIDs: [String: UInt64] = [:], links: [String: Link] = [:]) {
        self.cgroupParent = cgroupParent
        self.cgroupIDs = cgroupIDs
        self.links = links
    }
}

extension Profile {
    /// systemd's slice naming: a unit with `Slice=vpn-NAME.slice` lands in this cgroup.
    public func cgroupPath(parent: String) -> String {
        (parent.isEmpty ? "" : parent + "/") + "vpn-\(name).slice"
    }
}

/// The names the plan gives to a profile's nft objects, in one place so that status
/// readers and the planner agree.
public struct ProfileObjectNames: Sendable {
    public let profile: String
    public init(_ profile: String) { self.profile = profile }

    public var memberChain: String { "member_\(profile)" }
    public var inboundChain: String { "inbound_\(profile)" }
    public var egressChain: String { "egress_\(profile)" }
    /// Packets members sent (matched by cgroup or by their connection's mark).
    public var sentCounter: String { "\(profile)_sent" }
    /// Packets received on member connections.
    public var receivedCounter: String { "\(profile)_received" }
    /// Packets that left through the profile's tunnel.
    public var tunnelCounter: String { "\(profile)_tunnel" }
    /// Packets the killswitch dropped.
    public var droppedCounter: String { "\(profile)_dropped" }
}

/// Identifies our rules and routes among everybody else's (rtm_protocol / FRA_PROTOCOL).
public let vpnexecRouteProtocol: UInt8 = 118
public let vpnexecTableName = "vpnexec"
