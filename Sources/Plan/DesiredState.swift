import Addresses
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
    /// Cgroups whose sockets are born with a mark (BirthMarks).
    public var socketMarks: [SocketMarkAttachment]

    public init(nft: NftTable, rules: [RoutingRule], routes: [Route], sysctls: [Sysctl], cgroups: [String], socketMarks: [SocketMarkAttachment] = []) {
        self.nft = nft
        self.rules = rules
        self.routes = routes
        self.sysctls = sysctls
        self.cgroups = cgroups
        self.socketMarks = socketMarks
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
    /// Every cgroup beside the profile parent or one of its ancestors (the children of
    /// each directory on the way from the root down to the parent), by relative path:
    /// where a removed parent could come back with an id nobody knows.
    public var cgroupsAlongParent: [String: UInt64]
    /// Interfaces by name.
    public var links: [String: Link]
    /// The networks each tunnel interface is connected to (its addresses' prefixes), by name:
    /// with allow_lan they stay in the tunnel even when they are private ranges.
    public var tunnelNetworks: [String: [IPPrefix]]
    /// Cgroups systemd made that join a profile where they stand (UnitCgroups: a user's
    /// vpn-NAME.slice, a listed desktop app's scope), by relative path.
    public var joinedCgroups: [String: JoinedCgroup] = [:]
    /// Cgroups named like a profile's whose user may not use it: path -> why (for the log).
    public var refusedCgroups: [String: String] = [:]
    /// Each profile tunnel's own transport as vpnd knows it, by interface (TransportRules).
    public var tunnelTransports: [String: TunnelTransport] = [:]
    /// Each profile with trusted-network rules: its verdict on the networks now (TrustedEvaluator).
    public var trusted: [String: TrustedVerdict] = [:]

    public struct JoinedCgroup: Hashable, Sendable {
        public var profile: String
        public var id: UInt64
        public init(profile: String, id: UInt64) {
            self.profile = profile
            self.id = id
        }
    }

    public init(cgroupParent: String = "vpn.slice", cgroupIDs: [String: UInt64] = [:],
                cgroupsAlongParent: [String: UInt64] = [:], links: [String: Link] = [:], tunnelNetworks: [String: [IPPrefix]] = [:]) {
        self.cgroupParent = cgroupParent
        self.cgroupIDs = cgroupIDs
        self.cgroupsAlongParent = cgroupsAlongParent
        self.links = links
        self.tunnelNetworks = tunnelNetworks
    }

    /// Depth below the cgroup2 root, which `socket cgroupv2 level N` compares against:
    /// "vpn.slice/vpn-work.slice" is level 2.
    public static func level(of path: String) -> UInt32 {
        UInt32(path.split(separator: "/").count)
    }

    /// The directories whose children `cgroupsAlongParent` lists: the root ("") and each
    /// ancestor of the parent, not the parent itself.
    public static func directoriesAlong(parent: String) -> [String] {
        var directories = [""]
        var prefix = ""
        for component in parent.split(separator: "/").dropLast() {
            prefix += (prefix.isEmpty ? "" : "/") + component
            directories.append(prefix)
        }
        return directories
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
    /// Packets the killswitch dropped (leaving, or new connections to members arriving
    /// outside the tunnel).
    public var droppedCounter: String { "\(profile)_dropped" }
    /// New connections to a member's socket (a listener) are checked here.
    public var listenChain: String { "listen_\(profile)" }
    /// With allow_lan: a member's packet is sent on to the member chain or to `directChain`
    /// by its destination.
    public var classifyChain: String { "classify_\(profile)" }
    /// A member's packet that goes direct (the LAN): the bypass mark, remembered by the connection.
    public var directChain: String { "direct_\(profile)" }
    /// Member packets that went direct.
    public var directCounter: String { "\(profile)_direct" }
    /// Destinations that stay in the tunnel though they are in the LAN ranges.
    public func tunnelDestinations(ipv4: Bool) -> String { "tunnel_dst\(ipv4 ? 4 : 6)_\(profile)" }
    /// Addresses of bypass.domains names, as the profile's DNS proxy learned them.
    public func bypassDomainSet(ipv4: Bool) -> String { "bypass_dns\(ipv4 ? 4 : 6)_\(profile)" }
    /// Addresses of route.domains names, as the DNS proxies learned them.
    public func routeDomainSet(ipv4: Bool) -> String { "route_dns\(ipv4 ? 4 : 6)_\(profile)" }
    /// Members' DNS queries go to the profile's proxy.
    public var dnsChain: String { "dns_\(profile)" }
    /// Addresses the profile's proxy answered for names NOT in its bypass.domains: they stay
    /// in the tunnel though a bypassed name shares them.
    public func tunneledDomainSet(ipv4: Bool) -> String { "tunneled_dns\(ipv4 ? 4 : 6)_\(profile)" }
    /// Members' DNS over TLS or QUIC refused.
    public var encryptedDNSCounter: String { "\(profile)_encrypted_dns_refused" }
}

/// Identifies our rules and routes among everybody else's (rtm_protocol / FRA_PROTOCOL).
public let vpnexecRouteProtocol: UInt8 = 118
public let vpnexecTableName = "vpnexec"
/// Packets of cgroups vpnd does not know yet where a profile cgroup could be.
public let unknownCgroupCounter = MembershipRules.unknownCounter
/// Packets of processes in the bypass slice.
public let bypassedCounter = MembershipRules.bypassCounter
