import FoundationEssentials
import Launch

/// The requests vpnexec and vpnctl send to vpnd: one JSON object per line on a Unix
/// stream socket; vpnd answers with one line and closes. Who asks is not in the request:
/// vpnd reads it from the socket (SO_PEERCRED, SO_PEERPIDFD, SO_PEERGROUPS).
public enum ControlRequest: Codable, Hashable, Sendable {
    /// Put the calling process into the profile (vpnexec, just before it execs).
    case exec(profile: String)
    /// Put the calling process into the bypass slice, outside every profile (vpnexec
    /// --bypass), if the policy lets the caller.
    case bypass
    /// Put a running process into the profile.
    case move(profile: String, pid: Int32)
    /// Take a process out of its profile, back to where its user's session would have it.
    case moveOut(pid: Int32)
    /// The profiles the caller may use.
    case profiles
    /// The member processes of one profile, or of every profile the caller may use.
    case members(profile: String?)
    case status
    /// The state the policy on disk compiles to, without applying it.
    case plan
    case reload
    /// Remove every rule, route and table of ours (the killswitch included) and exit.
    case down
    /// Bring a profile's built-in tunnel up now and keep it up (no idle teardown) until
    /// `tunnelDown` or a reload.
    case tunnelUp(profile: String)
    /// Take a profile's built-in tunnel down and hold it down (members held by the
    /// killswitch, no handshake even with traffic) until `tunnelUp` or a reload.
    case tunnelDown(profile: String)
    /// What the kernel does with a process's traffic (`pid`), or with a new process's of a
    /// profile (`profile`): the caller's own processes only, and profiles it may use
    /// (Explanation).
    case explain(pid: Int32?, profile: String?)
}

public struct ControlResponse: Codable, Hashable, Sendable {
    public var ok: Bool
    public var message: String?
    public var status: StatusReport?
    public var profiles: [ProfileSummary]?
    public var members: [MemberReport]?
    /// With `members`: the profiles' network namespaces (containers), routed, relayed and
    /// held, and their forward.interfaces (absent from an older vpnd).
    public var routedNamespaces: [RoutedNamespaceReport]?
    public var relayedNamespaces: [RelayedNamespaceReport]?
    public var heldNamespaces: [HeldNamespaceReport]?
    public var forwardInterfaces: [String: [ForwardInterfaceReport]]?
    /// A launch's answer (exec): what vpnexec warns of before it execs.
    public var launch: LaunchReport?
    /// `explain`'s answer.
    public var explanation: Explanation?

    public init(ok: Bool, message: String? = nil, status: StatusReport? = nil, profiles: [ProfileSummary]? = nil, members: [MemberReport]? = nil,
                launch: LaunchReport? = nil, explanation: Explanation? = nil) {
        self.explanation = explanation
        self.ok = ok
        self.message = message
        self.status = status
        self.profiles = profiles
        self.members = members
        self.launch = launch
    }

    public static func failure(_ message: String) -> ControlResponse { ControlResponse(ok: false, message: message) }
}

public struct StatusReport: Codable, Hashable, Sendable {
    /// The version of this report's shape (`vpnctl status --json`): raised when a field
    /// changes meaning or goes away; new fields may appear without it.
    /// 2: `dns.bypassDomains`/`routeDomains` hold the first `DNSStatus.listedDomains`; the
    /// counts say how many the policy has. 3: sockets refused in unknown cgroups
    /// (`unknownCgroupRefusals`) instead of packets dropped, and `dns.encryptedDNS Refused`
    /// counts refused connects and sends, not packets (the socket programs refuse them).
    /// 4: `dns.port` is gone (members' queries, UDP and TCP, reach the proxy by routing,
    /// on no port of its own); `dns.failure` says why a profile's proxy does not run.
    /// 5: no prose where a program reads a value: `sandbox` (SandboxStatus), `birthMarks`
    /// (a list of BirthMarkReport) and `dnsSteering` (DNSSteeringStatus) are objects;
    /// `dns.encryptedDNS` says `no-domain-rules`; `dns.setSizes` is keyed by kind and
    /// family (`bypass4`, ...), not by set name; `wireguard.reconnect.schedule` is an
    /// object and a peer's `lastError` a token (its errno's words in `lastErrorDetail`);
    /// `transport.source` says `wg-socket`. A user other than root gets only the profiles
    /// it may use, and no host-wide field (those are optional: absent).
    /// 6: `tunnel.demand.state` is a token: `down-on-demand`, `down-held`, `connecting`, `up`
    /// (it was "down (on demand)" and "down (vpnctl down)"), as is the metrics' `state` label.
    public static let currentSchema = 6
    public var schema = StatusReport.currentSchema
    /// vpnd's version (what `vpnd --version` answers).
    public var version: String
    public var daemonPID: Int32
    /// Host-wide fields are absent from a status for a user other than root (Optional here).
    public var policyDirectory: String?
    public var cgroupRoot: String?
    /// The profiles (for a user other than root: those it may use).
    public var profiles: [ProfileStatus]
    /// The last reload (vpnd's start counts as the first): its outcome and time.
    public var lastReload: ReloadStatus?
    /// Internet sockets refused in cgroups vpnd did not know yet where a profile cgroup
    /// could be (e.g. a profile slice made again while vpnd was stopped), by the kernel.
    public var unknownCgroupRefusals: UInt64?
    /// Control connections closed at once because their user (or all users) held too many.
    public var refusedConnections: Int?
    /// Learned routes (route.domains, bypass.domains) that someone else deleted (`ip route
    /// del`, a flush) and vpnd put back, since it started.
    public var learnedRoutesPutBack: Int?
    /// What confines vpnd itself (Landlock), or why nothing does.
    public var sandbox: SandboxStatus?
    /// The cgroups whose sockets are born with their mark (the cgroup socket program), and
    /// those held because the kernel refused it; empty before any profile cgroup exists.
    public var birthMarks: [BirthMarkReport] = []
    /// How members' DNS reaches the proxies (routed, DNSSteeringPoint), or why it cannot;
    /// nil from a vpnd that applies once and exits.
    public var dnsSteering: DNSSteeringStatus?
    /// Processes moved into vpn-bypass.slice (bypass.executables) and their packets.
    public var bypassMoves: Int?
    /// Processes that ran a bypass.executables program and stayed in their profile: their
    /// users may not bypass (`[system] bypass`; root always may).
    public var bypassRefused: Int?
    public var bypassed: Traffic?
    /// Held cgroups: those whose socket programs the kernel does not have (read from the
    /// kernel at each apply: nothing is placed there and their traffic is dropped but on
    /// loopback), and a removed profile's with processes left in them (no network at all;
    /// `missing` empty).
    public var heldCgroups: [HeldCgroupReport] = []
    /// What the hold dropped.
    public var droppedHeld: Traffic?
    /// Packets with a mark of ours that no profile holds (a removed profile's sockets, a
    /// value set by hand), dropped by the killswitch.
    public var droppedStaleMarks: Traffic?
    /// Socket programs someone else detached and vpnd put back, since it started.
    public var socketProgramsPutBack: Int?
    /// Network namespaces other than vpnd's where members made sockets (containers of a
    /// profile) whose packets were dropped: their traffic is not routed into the tunnel.
    public var heldNamespaces: [HeldNamespaceReport] = []
    /// Members' network namespaces routed into their profile's tunnel by their veths.
    public var routedNamespaces: [RoutedNamespaceReport] = []
    /// Members' network namespaces let out to the processes reading their TUN/TAP devices.
    public var relayedNamespaces: [RelayedNamespaceReport] = []
    /// System mode: the profile of every process placed nowhere else.
    public var systemProfile: String?
    /// How the executable lists are enforced (when the policy has any).
    public var executableRules: ExecutableRulesStatus?

    /// What identifies the report; the host-wide fields are set by name (root's view).
    public init(version: String, daemonPID: Int32, policyDirectory: String?, cgroupRoot: String?, profiles: [ProfileStatus]) {
        self.version = version
        self.daemonPID = daemonPID
        self.policyDirectory = policyDirectory
        self.cgroupRoot = cgroupRoot
        self.profiles = profiles
    }
}

public struct ProfileStatus: Codable, Hashable, Sendable {
    public var name: String
    /// Written as `ip rule` and nft print it ("0x1000000").
    @Hexadecimal public var mark: UInt32
    public var table: UInt32
    public var killswitch: Bool
    public var cgroup: String
    public var members = 0
    /// Cgroups systemd made that joined the profile where they stand (a user's
    /// vpn-NAME.slice, a listed desktop app's scope); their processes count as members.
    public var joinedCgroups: [String] = []
    public var tunnel: TunnelStatus
    public var sent = Traffic.zero
    public var received = Traffic.zero
    public var throughTunnel = Traffic.zero
    public var droppedByKillswitch = Traffic.zero
    /// The profile's holes, as the policy declares them, and what went through them.
    public var exceptions = ExceptionStatus()
    /// The profile's DNS proxy.
    public var dns: DNSStatus?
    /// Trusted networks (TrustedStatus), for a profile with rules.
    public var trusted: TrustedStatus?
    /// Multihop: the entry profile that carries this profile's transport (HopStatus).
    public var via: HopStatus?
    /// Its `forward.interfaces`, by name (absent: none).
    public var forwardInterfaces: [ForwardInterfaceReport]?
    /// Its routed containers' and forward.interfaces' DNS queries dropped because its DNS is
    /// not served (absent while it has none of either).
    public var containerDNSDropped: Traffic?

    /// What identifies the profile and its tunnel; members and traffic start at zero and are
    /// set by name.
    public init(name: String, mark: UInt32, table: UInt32, killswitch: Bool, cgroup: String, tunnel: TunnelStatus) {
        self.name = name
        self.mark = mark
        self.table = table
        self.killswitch = killswitch
        self.cgroup = cgroup
        self.tunnel = tunnel
    }
}

public struct DNSStatus: Codable, Hashable, Sendable {
    /// At most this many of each list are in a status, in policy order: a policy may hold
    /// 100,000 domains, and a status that carried them all would be megabytes per call.
    public static let listedDomains = 64
    /// `encryptedDNS`'s values.
    public static let encryptedRefused = "refused", encryptedAllowed = "allowed", noDomainRules = "no-domain-rules"

    public var servers: [String]
    /// Where `servers` came from: "dns" (the profile's), "wg-quick" (its built-in tunnel's
    /// `DNS =`), "systemd-resolved", "systemd-resolved-dbus" (asked of resolved over
    /// D-Bus), "systemd-networkd" or "resolvconf" (the host's servers for its interface),
    /// or "none" (members' queries are refused). Absent from an older vpnd.
    public var serversFrom: String?
    /// The file they were read from (a wg-quick file, the host's record for the interface).
    public var serversFile: String?
    /// For "systemd-resolved-dbus": the interface index resolved was asked about.
    public var serversLink: Int32?
    /// Why the profile's proxy does not run (members' queries are then refused, none
    /// leaves); absent while it runs.
    public var failure: String?
    public var bypassDomains: [String] = []
    public var bypassDomainCount = 0
    public var routeDomains: [String] = []
    public var routeDomainCount = 0
    public var answered: UInt64 = 0
    public var forwarded: UInt64 = 0
    /// Answered by the proxy itself: SERVFAIL (timeouts, refused fills), REFUSED, FORMERR.
    public var failed: UInt64 = 0
    public var dropped: UInt64 = 0
    /// Addresses each of the profile's domain sets holds now.
    public var setSizes = DomainSetSizes()
    /// Firefox's canary (use-application-dns.net) answered NXDOMAIN by the proxy.
    public var canaryAnswered: UInt64 = 0
    /// Members' DNS over TLS/QUIC (port 853): "refused" (where domain rules apply),
    /// "allowed" (allow_encrypted_dns), or "no-domain-rules" (nothing to protect).
    public var encryptedDNS = DNSStatus.noDomainRules
    /// Connects and sends to port 853 refused.
    public var encryptedDNSRefused: UInt64 = 0
    /// Addresses answered for a bypassed name and for one that is not (each such pair once):
    /// they stay in the tunnel while both answers live.
    public var sharedAddresses: UInt64 = 0
    /// The live ones, most recent first, at most a few.
    public var sharedNow: [SharedAddressReport] = []
    /// Members' lookups that do not go to port 53 (NamesStatus); absent from an older vpnd.
    public var names: NamesStatus?

    /// What the proxy asks; the lists and counts start empty and are set by name.
    public init(servers: [String]) {
        self.servers = servers
    }
}

/// Names follow the app: members' lookups through systemd-resolved's varlink socket (what
/// nss-resolve calls) and nscd's socket.
public struct NamesStatus: Codable, Hashable, Sendable {
    /// Where vpnd answers the profile's members' resolved lookups; absent where they are not
    /// followed (`failure`).
    public var socket: String?
    /// Why members' lookups through resolved and nscd are not followed on this host (a
    /// kernel before 6.7): they leave outside the profile.
    public var failure: String?
    /// Members' connects to resolved's socket sent to `socket` (the kernel's count).
    public var redirected: UInt64 = 0
    /// Members' connects to nscd's socket refused (glibc then resolves by itself).
    public var nscdRefused: UInt64 = 0
    /// Calls read on `socket`, answered with addresses or names, answered with an error,
    /// and connections closed for breaking the protocol or its bounds.
    public var calls: UInt64 = 0
    public var answered: UInt64 = 0
    public var errors: UInt64 = 0
    public var refused: UInt64 = 0

    public init(socket: String?, failure: String? = nil) {
        self.socket = socket
        self.failure = failure
    }
}

/// A cgroup of a profile (or the profile parent) held because the kernel lacks its socket
/// programs.
public struct HeldCgroupReport: Codable, Hashable, Sendable {
    public var cgroup: String
    /// The profile it belongs to (nil: the profile parent, or a removed profile's).
    public var profile: String?
    /// The programs it lacks, by their kernel names (`vx_create`, ...).
    public var missing: [String]
    /// What the kernel said when vpnd attached them.
    public var reason: String

    public init(cgroup: String, profile: String?, missing: [String], reason: String) {
        self.cgroup = cgroup
        self.profile = profile
        self.missing = missing
        self.reason = reason
    }
}

/// A network namespace (a container's) where processes of a profile made sockets: what
/// they sent outside its loopback was dropped.
public struct HeldNamespaceReport: Codable, Hashable, Sendable {
    /// The namespace's cookie (SO_NETNS_COOKIE).
    public var cookie: UInt64
    /// Packets dropped since the programs were attached.
    public var packets: UInt64
    /// The last process that made a socket there, and its cgroup, while it lives.
    public var pid: Int32?
    public var cgroup: String?
    /// The profile that cgroup belongs to.
    public var profile: String?
    /// Why it is not routed (what of it does not lead to the host), when vpnd looked.
    public var reason: String?
    /// The id vpnd's namespace gives it (`ip netns list-id`), where it has one.
    public var namespaceID: Int32?
    /// What its cgroup names it (ContainerName).
    public var runtime: String?
    public var name: String?
    /// Its addresses, as its interfaces hold them (IPv6 link-local left out), where vpnd
    /// can ask it (it has an id).
    public var addresses: [String]?

    public init(cookie: UInt64, packets: UInt64, pid: Int32? = nil, cgroup: String? = nil, profile: String? = nil, reason: String? = nil) {
        self.cookie = cookie
        self.packets = packets
        self.pid = pid
        self.cgroup = cgroup
        self.profile = profile
        self.reason = reason
    }
}

/// A member's network namespace (a container of a profile) whose veths' host ends make what
/// it sends the profile's: routed into the tunnel, held by the killswitch.
public struct RoutedNamespaceReport: Codable, Hashable, Sendable {
    public var cookie: UInt64
    public var profile: String
    /// The host ends of its veths.
    public var interfaces: [String]
    /// The bridges those of them that are ports belong to.
    public var bridges: [String]
    /// The id vpnd's namespace gives it: `ip netns list-id`, and the `link-netnsid` of its
    /// veths' host ends in `ip -d link` (its inode is not vpnd's to read: that takes ptrace
    /// access to its processes, whose capabilities exceed vpnd's).
    public var namespaceID: Int32?
    /// The cgroup of the last process vpnd saw make a socket there, and what that names it
    /// (ContainerName: "docker", "podman", "machine", "container", "unit").
    public var cgroup: String?
    public var runtime: String?
    public var name: String?
    /// Its addresses, as its interfaces hold them (IPv6 link-local left out).
    public var addresses: [String]?
    /// What it sent and received across its interfaces: the counters of their host ends
    /// (forwarded into the tunnel, its DNS and neighbour discovery included).
    public var sent: Traffic?
    public var received: Traffic?
    /// Packets its cgroup's egress dropped before it was routed (or while it was held).
    public var heldPackets: UInt64?

    public init(cookie: UInt64, profile: String, interfaces: [String], bridges: [String] = []) {
        self.cookie = cookie
        self.profile = profile
        self.interfaces = interfaces
        self.bridges = bridges
    }
}

/// An interface of a profile's `forward.interfaces` (a VM's bridge or tap): whether it is
/// there, and what crossed it.
public struct ForwardInterfaceReport: Codable, Hashable, Sendable {
    /// `state`'s values: what arrives on it is the profile's; it is there but down; there is
    /// none of that name (yet: the rules wait for it by name); it carries a default route of
    /// the host's (the uplink), so nothing of it is the profile's.
    public static let routed = "routed", down = "down", missing = "missing", uplink = "uplink"

    public var interface: String
    public var state: String
    /// What arrived on it (forwarded into the tunnel, or to the proxy) and left by it: its
    /// own counters; absent while it is missing.
    public var received: Traffic?
    public var sent: Traffic?

    public init(interface: String, state: String, received: Traffic? = nil, sent: Traffic? = nil) {
        self.interface = interface
        self.state = state
        self.received = received
        self.sent = sent
    }
}

/// A member's network namespace (a rootless podman container) whose interfaces but loopback
/// are TUN/TAP devices alone: what it sends goes to the process reading them (slirp4netns,
/// pasta), which sends it on with sockets of its own, tunneled as a member's when it is one.
public struct RelayedNamespaceReport: Codable, Hashable, Sendable {
    public var cookie: UInt64
    public var profile: String
    /// Its TUN/TAP devices, by their names in it.
    public var interfaces: [String]
    /// The id vpnd's namespace gives it (vpnd gives it one when it finds it).
    public var namespaceID: Int32?
    /// The cgroup of the last process vpnd saw make a socket there, and what that names it
    /// (ContainerName).
    public var cgroup: String?
    public var runtime: String?
    public var name: String?
    /// Its addresses, as its devices hold them (IPv6 link-local left out).
    public var addresses: [String]?
    /// The process reading its devices, where the relays' command lines tell which
    /// (RelayFinder: slirp4netns, pasta; `match` says how); absent when they do not.
    public var relay: RelayProcessReport?

    public init(cookie: UInt64, profile: String, interfaces: [String]) {
        self.cookie = cookie
        self.profile = profile
        self.interfaces = interfaces
    }
}

/// The process that reads a relayed namespace's TUN/TAP device and sends what it reads
/// with sockets of its own: those are its profile's members' (through that profile's
/// tunnel, held by its killswitch) or, in no profile, the host's.
public struct RelayProcessReport: Codable, Hashable, Sendable {
    /// `match`'s values: its command line names the namespace (by a process in it, or by a
    /// file vpnd can open), or it is the only relay that can be the namespace's (its command
    /// line names a file vpnd cannot see, as rootless podman's in its own mount namespace,
    /// with its device and its user), and the namespace the only one it can be for.
    public static let named = "named", alone = "alone"

    public var pid: Int32
    /// Its program's name ("slirp4netns", "pasta").
    public var program: String
    public var match: String
    /// The profile its cgroup is in; absent: none (it sends as any process of the host).
    public var profile: String?
    public var cgroup: String?

    public init(pid: Int32, program: String, match: String = RelayProcessReport.named, profile: String? = nil, cgroup: String? = nil) {
        self.pid = pid
        self.program = program
        self.match = match
        self.profile = profile
        self.cgroup = cgroup
    }
}

/// An address a bypassed name shares with a name that is not bypassed, kept in the tunnel.
public struct SharedAddressReport: Codable, Hashable, Sendable {
    public var address: String
    public var bypassed: String
    public var tunneled: String
    /// Until one of the two answers expires.
    public var secondsLeft: UInt32

    public init(address: String, bypassed: String, tunneled: String, secondsLeft: UInt32) {
        self.address = address
        self.bypassed = bypassed
        self.tunneled = tunneled
        self.secondsLeft = secondsLeft
    }
}

public struct ExceptionStatus: Codable, Hashable, Sendable {
    public var allowLAN = false
    public var allowMulticast = false
    public var routeNetworks: [String] = []
    public var bypassExecutables: [String] = []
    public var routeExecutables: [String] = []
    /// Processes moved into this profile because they ran one of its route.executables.
    public var execMoves = 0
    /// Member packets sent direct (allow_lan).
    public var direct = Traffic.zero

    public init() {}

    public var isEmpty: Bool { !allowLAN && routeNetworks.isEmpty && bypassExecutables.isEmpty && routeExecutables.isEmpty }
}

public struct TunnelStatus: Codable, Hashable, Sendable {
    public var interface: String
    /// "up", "down" (exists, administratively down or no carrier) or "missing"; a built-in
    /// tunnel's is "connecting" while its interface is up but no handshake has completed.
    public var state: String
    public var addresses: [String] = []
    public var rxBytes: UInt64 = 0
    public var txBytes: UInt64 = 0
    /// The built-in engine's view, for a profile with `tunnel.wireguard`.
    public var wireguard: WireGuardReport?
    /// The tunnel's own transport, kept out of every profile (TransportStatus).
    public var transport: TransportStatus?
    /// Several servers: which one is in use and why (ServerChoiceStatus).
    public var servers: ServerChoiceStatus?
    /// Built-in tunnels: up, connecting or down, since when and why (TunnelDemandStatus).
    public var demand: TunnelDemandStatus?

    /// The interface and its state; addresses and byte counts start empty and are set by name.
    public init(interface: String, state: String) {
        self.interface = interface
        self.state = state
    }
}

public struct WireGuardReport: Codable, Hashable, Sendable {
    public var publicKey: String?
    public var listenPort: UInt16?
    public var peers: [WireGuardPeerReport]
    /// Dropped packets by reason (malformed, badMAC, replay, unknownPeer, notAllowedIP, ...).
    public var drops: [String: UInt64]
    public var reconnect: ReconnectReport?

    public init(publicKey: String?, listenPort: UInt16?, peers: [WireGuardPeerReport], drops: [String: UInt64]) {
        self.publicKey = publicKey
        self.listenPort = listenPort
        self.peers = peers
        self.drops = drops
    }
}

public struct WireGuardPeerReport: Codable, Hashable, Sendable {
    public var publicKey: String
    public var allowedIPs: [String]
    public var endpoint: String?
    /// Seconds since the epoch of the last completed handshake.
    public var latestHandshake: Double?
    public var rxBytes: UInt64 = 0
    public var txBytes: UInt64 = 0

    /// The peer as configured; what was seen of it (endpoint, handshake, bytes) is set by name.
    public init(publicKey: String, allowedIPs: [String]) {
        self.publicKey = publicKey
        self.allowedIPs = allowedIPs
    }
}

/// A profile as `vpnctl profiles` lists it.
public struct ProfileSummary: Codable, Hashable, Sendable {
    public var name: String
    public var interface: String
    /// As in TunnelStatus: "up", "down" or "missing".
    public var state: String
    public var builtIn: Bool
    public var killswitch: Bool
    public var members = 0

    public init(name: String, interface: String, state: String, builtIn: Bool, killswitch: Bool) {
        self.name = name
        self.interface = interface
        self.state = state
        self.builtIn = builtIn
        self.killswitch = killswitch
    }
}

/// A process in a profile, as `vpnctl members` lists it.
public struct MemberReport: Codable, Hashable, Sendable {
    public var pid: Int32
    public var uid: UInt32
    public var user: String
    public var profile: String
    /// Its command line (its name in brackets where it has none: a kernel thread, a zombie).
    public var command: String
    /// When it started, in seconds since the epoch.
    public var since: Double

    public init(pid: Int32, uid: UInt32, user: String, profile: String, command: String, since: Double) {
        self.pid = pid
        self.uid = uid
        self.user = user
        self.profile = profile
        self.command = command
        self.since = since
    }
}

public struct Traffic: Codable, Hashable, Sendable {
    public var packets: UInt64
    public var bytes: UInt64

    public init(packets: UInt64, bytes: UInt64) {
        self.packets = packets
        self.bytes = bytes
    }

    public static let zero = Traffic(packets: 0, bytes: 0)
}

public enum ControlCoding {
    /// Sorted keys and plain slashes: the same value is the same bytes in every run (a
    /// dictionary's own order changes from process to process), as scripts and diffs want.
    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own plain types cannot fail.
        return Array(try! encoder.encode(value)) + [UInt8(ascii: "\n")]
    }

    public static func decode<T: Decodable>(_ type: T.Type, from line: [UInt8]) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(line))
    }

    /// Why a line did not decode, in one line of words ("no key \"ok\"", "status.profiles:
    /// expected an array"), not a DecodingError's dump of its context.
    public static func describe(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "" : keys.joined(separator: ".") + ": "
        }
        switch error {
        case let DecodingError.keyNotFound(key, context): return "\(path(context))no key \"\(key.stringValue)\""
        case let DecodingError.valueNotFound(_, context), let DecodingError.typeMismatch(_, context),
             let DecodingError.dataCorrupted(context):
            return path(context) + context.debugDescription
        default:
            return "\(error)".split(separator: "\n").joined(separator: "; ")
        }
    }
}
