import Addresses
import DomainNames

/// The validated policy: what every file in the policy directory says, together.
public struct Policy: Hashable, Sendable {
    /// Profiles in the order they were defined (file name order, then position).
    public var profiles: [Profile] { didSet { profiles = Policy.marked(profiles, routing: routing) } }
    public var routing: RoutingSettings { didSet { profiles = Policy.marked(profiles, routing: routing) } }
    public var dns: DNSSettings
    public var system: SystemSettings

    public init(profiles: [Profile], routing: RoutingSettings = RoutingSettings(), dns: DNSSettings = DNSSettings(),
                system: SystemSettings = SystemSettings()) {
        self.profiles = Policy.marked(profiles, routing: routing)
        self.routing = routing
        self.dns = dns
        self.system = system
    }

    public func profile(named name: String) -> Profile? { profiles.first { $0.name == name } }

    /// System mode: the profile of every process that is in no other profile, not in the
    /// bypass slice and not exempt (SystemRules).
    public var systemProfile: Profile? { system.profile.flatMap { profile(named: $0) } }

    /// Not a profile's name: `vpn-bypass.slice`, beside the profiles' slices, holds the
    /// processes that go direct (bypass.executables).
    public static let bypassSliceName = "bypass"

    /// Whether any profile lists executables (vpnd then marks the files and follows exec events).
    public var listsExecutables: Bool { profiles.contains { !$0.bypassExecutables.isEmpty || !$0.routeExecutables.isEmpty } }
}

public struct Profile: Hashable, Sendable {
    public var name: String
    /// Where `[profile.NAME]` (or its first key) was written.
    public var location: SourceLocation
    public var tunnel: Tunnel
    public var access: Access
    public var killswitch: Bool
    /// Index under the mark mask: mark value = index << shift; routing table = base + index.
    public var index: UInt32
    /// Set by the policy that holds the profile, from its index and the policy's routing
    /// (the default routing's until then).
    public internal(set) var mark: ProfileMark
    public var table: UInt32
    /// The table of the profile's route lists (route.networks and route.domains for
    /// non-members): its own number plus 65536, modulo 2^32.
    public var routeListTable: UInt32 { table &+ 65536 }
    /// The table its members' UDP DNS queries are routed to (DNSRouting): its own number
    /// plus 131072, modulo 2^32.
    public var dnsTable: UInt32 { table &+ 131072 }
    /// Members reach private (RFC 1918, ULA) and link-local destinations directly.
    public var allowLAN = false
    /// ...and multicast and broadcast ones (only with allowLAN).
    public var allowMulticast = false
    /// Networks that always go into this profile's tunnel, whoever connects (host bits clear).
    public var routeNetworks: [IPPrefix] = []
    /// Interfaces whose arriving traffic is the profile's (`forward.interfaces`: a VM's
    /// bridge or tap, a LAN segment this host routes for): routed into its tunnel, held by
    /// its killswitch, its DNS answered by its proxy.
    public var forwardInterfaces: [String] = []
    /// Executables (absolute paths) that go direct even when started inside this profile.
    public var bypassExecutables: [String] = []
    /// Executables that join this profile wherever they are started.
    public var routeExecutables: [String] = []
    /// Where each listed executable (bypass or route) was written, for messages about the file.
    public var executableLocations: [String: SourceLocation] = [:]
    /// The profile's resolvers, reached through its tunnel (empty: a built-in tunnel's
    /// `DNS =`, else members' queries are refused).
    public var dnsServers: [IPAddress] = []
    /// Names whose addresses members reach directly.
    public var bypassDomains: [DomainPattern] = []
    /// Names whose addresses anyone reaches through this profile's tunnel.
    public var routeDomains: [DomainPattern] = []
    /// Desktop application ids whose systemd scopes (`app-...-ID-....scope`) join the profile.
    public var apps: [String] = []
    /// Members may use DNS over TLS or QUIC (port 853) though domain rules apply to them;
    /// by default it is refused for such profiles (EncryptedDNSRules), since the proxy sees
    /// none of it.
    public var allowEncryptedDNS = false
    /// Trusted networks: rules tried in order whenever the host's networks change.
    public var trusted: [TrustedRule] = []
    /// Multihop: the profile whose tunnel carries this one's encrypted transport.
    public var via: Via?
    /// Several servers for a built-in tunnel, and how vpnd picks one (ServerList).
    public var servers: ServerList?
    /// A built-in tunnel that is down until it is needed (OnDemandSettings); nil: always up.
    public var onDemand: OnDemandSettings?
    /// A built-in tunnel's handshake retry schedule; nil keeps WireGuard's own.
    public var reconnect: Reconnect?

    /// What identifies a profile; its exceptions, domain rules and tunnel options are
    /// set by name afterwards (the parser sets those the file has).
    public init(name: String, location: SourceLocation, tunnel: Tunnel, access: Access, killswitch: Bool, index: UInt32, table: UInt32) {
        self.name = name
        self.location = location
        self.tunnel = tunnel
        self.access = access
        self.killswitch = killswitch
        self.index = index
        self.mark = ProfileMark(RoutingSettings().mark(forIndex: index))
        self.table = table
    }
}

public enum Tunnel: Hashable, Sendable, CustomStringConvertible {
    /// An interface someone else brings up (wg-quick, wireguard-go, OpenVPN).
    case interface(String)
    /// vpnd's own WireGuard-compatible engine, configured from a wg-quick style file, on a
    /// TUN interface vpnd creates with this name.
    case wireguard(config: String, interface: String, location: SourceLocation)

    public var interfaceName: String {
        switch self {
        case let .interface(name): return name
        case let .wireguard(_, name, _): return name
        }
    }

    public var isBuiltIn: Bool { if case .wireguard = self { return true } else { return false } }

    /// Where a built-in tunnel's file was named.
    public var location: SourceLocation? { if case let .wireguard(_, _, at) = self { return at } else { return nil } }

    public var description: String {
        switch self {
        case let .interface(name): return "interface \(name)"
        case let .wireguard(config, name, _): return "built-in WireGuard \(name) from \(config)"
        }
    }
}

/// Who may put processes into a profile.
public struct Access: Hashable, Sendable {
    public var users: [Principal]
    public var groups: [Principal]
    /// Where the rule was written, for the refusal message.
    public var location: SourceLocation

    public init(users: [Principal], groups: [Principal], location: SourceLocation) {
        self.users = users
        self.groups = groups
        self.location = location
    }

    /// Root may always; otherwise the uid is listed or one of the groups is.
    public func allows(uid: UInt32, groups memberOf: [UInt32]) -> Bool {
        uid == 0 || users.contains { $0.id == uid } || groups.contains { memberOf.contains($0.id) }
    }

    public var summary: String {
        let who = users.map(\.description) .map { "user \($0)" } + groups.map(\.description).map { "group \($0)" }
        return who.isEmpty ? "nobody but root" : who.joined(separator: ", ")
    }
}

/// A user or group as written (name or number) and its resolved id.
public struct Principal: Hashable, Sendable, CustomStringConvertible {
    public var name: String?
    public var id: UInt32

    public init(name: String?, id: UInt32) {
        self.name = name
        self.id = id
    }

    public var description: String { name.map { "\($0) (\(id))" } ?? String(id) }
}

/// How profiles map to marks, tables and rules. Defaults stay clear of the marks used by
/// wg-quick (0xca6c), tailscale (0xff0000), Docker/kube-proxy (0x4000, 0x8000) and Calico.
public struct RoutingSettings: Hashable, Sendable {
    public var markMask: UInt32 = 0x7f00_0000
    public var tableBase: UInt32 = 7300
    public var rulePriority: UInt32 = 7300
    public var location: SourceLocation?

    public init() {}

    public var markShift: UInt32 { UInt32(markMask.trailingZeroBitCount) }
    /// The highest index is reserved: marked with it, a socket bypasses every profile.
    public var maximumIndex: UInt32 { (markMask >> markShift) - 1 }
    public var bypassMark: UInt32 { markMask }
    /// A bit outside the mask, set beside a profile's mark on its DNS proxy's own upstream
    /// sockets: the rules that route members' port-53 queries to the proxy compare it, so
    /// the proxy's queries go on into the tunnel instead of back to the proxy. The bit
    /// above the mask, or the one below when the mask reaches bit 31.
    public var proxyMark: UInt32 {
        markMask.leadingZeroBitCount > 0 ? UInt32(1) << UInt32(32 - markMask.leadingZeroBitCount) : UInt32(1) << (markShift - 1)
    }

    public func mark(forIndex index: UInt32) -> UInt32 { index << markShift }
}

/// `[system]`: system mode (lockdown) and who may start commands outside every profile.
public struct SystemSettings: Hashable, Sendable {
    /// The profile of every process not placed anywhere else (nil: system mode is off).
    public var profile: String?
    /// Who may start commands in the bypass slice with `vpnexec --bypass` (root always
    /// may); nil when no policy says.
    public var bypass: Access?
    /// Where `[system]` was written.
    public var location: SourceLocation?

    public init(profile: String? = nil, bypass: Access? = nil, location: SourceLocation? = nil) {
        self.profile = profile
        self.bypass = bypass
        self.location = location
    }
}

/// `[dns]`: how the profiles' DNS proxies run.
public struct DNSSettings: Hashable, Sendable {
    /// Set elements live for a record's TTL held within these bounds (seconds).
    public var minTTL: UInt32 = 60
    public var maxTTL: UInt32 = 86_400
    public var location: SourceLocation?

    public init() {}

}
