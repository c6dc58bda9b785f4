import Addresses
import Nftables
import Policy
import Routing
import SocketPrograms

/// Everything the kernel should hold for a policy: the socket programs on the profiles'
/// cgroups, policy rules, routes in the profiles' tables, one nft table (the killswitch),
/// the DNS steering addresses and a few sysctls. The daemon's apply edge makes the kernel match this value; `vpnctl
/// plan` prints it.
public struct DesiredState: Hashable, Sendable {
    public var nft: NftTable
    public var rules: [RoutingRule]
    public var routes: [Route]
    public var sysctls: [Sysctl]
    /// Profile cgroups (relative to the cgroup2 root) that must exist.
    public var cgroups: [String]
    /// Where the socket programs are attached, and what they do there (SocketProgramPlan).
    public var socketPrograms: [SocketProgramAttachment]
    /// Which run-time set elements (what the DNS proxies learn) become routes too, and how
    /// (LearnedRoutes).
    public var learnedRoutes: [LearnedRoutes]
    /// The cgroups along the profile parent that the root's path guard knows.
    public var pathGuard: PathGuard?
    /// Each transport port that goes direct and the chain that holds it while it drains: the
    /// apply edge holds a port whose exclusion rule is new before it adds the rule.
    public var transportDrains: [UInt16: String] = [:]
    /// Addresses vpnd keeps on an interface it did not make (DNSRouting.addresses): added
    /// before the routes that use them as their source.
    public var addresses: [InterfaceAddress] = []
    /// Members' network namespaces whose packets may leave their cgroups (ContainerRules
    /// routes what they forward): applied after the rules.
    public var namespacesLetOut: [UInt64: ForeignNamespaces.Place] = [:]
    /// The bridge family's table, while a routed container's veth is a bridge's port: it
    /// marks what arrives on that port, before the bridge passes it up (ContainerRules).
    public var bridgeNft: NftTable?
    /// Whether the hold device exists (HoldDevice): made before the routes through it are
    /// planned (they follow from the facts once it is there), removed when no profile holds.
    public var holdDevice = false

    public init(nft: NftTable, rules: [RoutingRule], routes: [Route], sysctls: [Sysctl], cgroups: [String],
                socketPrograms: [SocketProgramAttachment] = [], learnedRoutes: [LearnedRoutes] = [], pathGuard: PathGuard? = nil) {
        self.nft = nft
        self.rules = rules
        self.routes = routes
        self.sysctls = sysctls
        self.cgroups = cgroups
        self.socketPrograms = socketPrograms
        self.learnedRoutes = learnedRoutes
        self.pathGuard = pathGuard
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
    /// The addresses of the profile tunnels, by interface: nothing with one of them as its
    /// source leaves through another interface.
    public var tunnelAddresses: [String: [IPAddress]] = [:]
    /// The cgroup2 root's id (the path guard, and system mode's DNS programs, are attached there).
    public var rootCgroupID: UInt64?
    /// IPv6 is on for `lo` (`Link.ipv6`): members' IPv6 DNS can be steered (DNSRouting).
    public var loopbackIPv6 = true
    /// Planned cgroups whose socket programs the kernel lacks (vpnd's last apply found them
    /// refused): path -> id. They are held (UnguardedRules).
    public var unguardedCgroups: [String: UInt64] = [:]
    /// A removed (or renamed) profile's cgroups below the parent that still have processes:
    /// path -> id. They are held (SocketProgramPlan.leftBehind).
    public var leftBehind: [String: UInt64] = [:]
    /// Members' network namespaces other than vpnd's (Containers), routed or held.
    public var containers: [ContainerNamespace] = []
    /// The interfaces of the main table's default routes (IPv4 and IPv6), read when a
    /// profile lists forward.interfaces: a listed uplink is refused (what arrives from the
    /// internet, replies to the host's own connections included, would go into the tunnel).
    public var uplinks: Set<String> = []
    /// The DNS servers the host holds for the interfaces of profiles without `dns`, by
    /// interface (ProfileResolvers): not planned from, but read with the rest each pass, as
    /// they may come after the interface.
    public var linkResolvers: [String: LinkResolvers] = [:]
    /// Profile -> the socket where vpnd answers its members' lookups through resolved's
    /// varlink interface (empty where the kernel cannot send them there, before 6.7).
    public var resolveSockets: [String: String] = [:]

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

extension RuntimeFacts {
    /// The profile name a cgroup directly below the parent is named for (`vpn-NAME.slice`).
    public static func profileName(ofSlice name: String) -> String? {
        guard name.hasPrefix("vpn-"), name.hasSuffix(".slice"), name.count > 10 else { return nil }
        return String(name.dropFirst(4).dropLast(6))
    }
}

/// The names the plan gives to a profile's nft objects, in one place so that status
/// readers and the planner agree.
public struct ProfileObjectNames: Sendable {
    public let profile: String
    public init(_ profile: String) { self.profile = profile }

    /// Where members' packets are held (postrouting): into the tunnel, to loopback, to the
    /// profile's exceptions, or dropped.
    public var egressChain: String { "egress_\(profile)" }
    /// Packets received through the profile's tunnel are counted here.
    public var inboundChain: String { "inbound_\(profile)" }
    /// New connections to a member's socket (a listener) are checked here.
    public var listenChain: String { "listen_\(profile)" }
    /// Packets members sent (and non-members whose sockets carry the profile's mark).
    public var sentCounter: String { "\(profile)_sent" }
    /// Packets received through the profile's tunnel.
    public var receivedCounter: String { "\(profile)_received" }
    /// Packets that left through the profile's tunnel.
    public var tunnelCounter: String { "\(profile)_tunnel" }
    /// Packets the killswitch dropped (leaving, or new connections to members arriving
    /// outside the tunnel).
    public var droppedCounter: String { "\(profile)_dropped" }
    /// Member packets that went direct (allow_lan, bypass.domains).
    public var directCounter: String { "\(profile)_direct" }
    /// Destinations that stay in the tunnel though they are in the LAN ranges.
    public func tunnelDestinations(ipv4: Bool) -> String { "tunnel_dst\(ipv4 ? 4 : 6)_\(profile)" }
    /// Addresses of bypass.domains names, as the profile's DNS proxy learned them.
    public func bypassDomainSet(ipv4: Bool) -> String { "bypass_dns\(ipv4 ? 4 : 6)_\(profile)" }
    /// Addresses of route.domains names, as the DNS proxies learned them.
    public func routeDomainSet(ipv4: Bool) -> String { "route_dns\(ipv4 ? 4 : 6)_\(profile)" }
    /// Addresses the profile's proxy answered for names NOT in its bypass.domains: they stay
    /// in the tunnel though a bypassed name shares them.
    public func tunneledDomainSet(ipv4: Bool) -> String { "tunneled_dns\(ipv4 ? 4 : 6)_\(profile)" }
}

/// Identifies our rules and routes among everybody else's (rtm_protocol / FRA_PROTOCOL).
public let vpnexecRouteProtocol: UInt8 = 118
/// Routes made from what the DNS proxies learned (LearnedRoutes): apart from the planned
/// ones, which the apply edge reconciles every second, and kept by their own lifetimes.
public let vpnexecLearnedRouteProtocol: UInt8 = 119
public let vpnexecTableName = "vpnexec"
/// Packets of processes in the bypass slice.
public let bypassedCounter = KillswitchRules.bypassCounter
