import Addresses
import Control
import DNS
import HexDigits
import Nftables
import Plan
import Policy
import Routing
import SocketPrograms

/// `vpnctl status` from plain values: the policy in force, the kernel's counters, links
/// and addresses, and what vpnd's running parts report (Parts, ProfileParts). It reads
/// nothing itself, so a unit test feeds it a fixture (StatusBuilderTests); vpnd gathers
/// the values (Daemon+StatusParts).
struct StatusBuilder {
    /// What vpnd knows of itself.
    struct Parts {
        var version: String
        var pid: Int32
        var policyDirectory: String
        var cgroupRoot: String
        var refusedConnections = 0
        var learnedRoutesPutBack = 0
        var sandbox = SandboxStatus(state: SandboxStatus.off)
        var dnsSteering: DNSSteeringStatus?
        var lastReload: ReloadStatus?
        var bypassMoves = 0
        var bypassRefused = 0
        var executableRules: ExecutableRulesStatus?
        /// Planned cgroups the kernel lacks socket programs of, at the last apply.
        var unguarded: [String: UnguardedCgroup] = [:]
        /// A removed profile's cgroups with processes left in them, held.
        var leftBehind: [String: UInt64] = [:]
        /// Members' network namespaces other than vpnd's with packets dropped.
        var heldNamespaces: [HeldNamespaceReport] = []
        var routedNamespaces: [RoutedNamespaceReport] = []
        var relayedNamespaces: [RelayedNamespaceReport] = []
        var socketProgramsPutBack = 0
    }

    /// What vpnd's running parts know of one profile.
    struct ProfileParts {
        /// Its processes, in its cgroup and in those that joined it.
        var members = 0
        /// Cgroups that joined it where they stand (a user's vpn-NAME.slice, an app's scope).
        var joinedCgroups: [String] = []
        /// Processes placed in it by exec rules.
        var execMoves = 0
        var transport: TransportStatus?
        var servers: ServerChoiceStatus?
        var demand: TunnelDemandStatus?
        /// A built-in tunnel's engine; nil: none runs (shown empty).
        var wireguard: WireGuardReport?
        var reconnect: ReconnectReport?
        var trusted: TrustedStatus?
        /// Its DNS proxy's counters; nil: no proxy runs for it.
        var dns: DNSProxyCounters?
        /// Why its proxy does not run, where it should.
        var dnsFailure: String?
        /// Addresses shared by a bypassed and a tunneled name now.
        var sharedNow: [SharedAddressReport] = []
        /// Whom its proxy asks, and where they came from (nil: its `dns`).
        var resolvers: ProfileResolvers?
        /// Its members' lookups through resolved and nscd (nil: neither followed nor said).
        var names: NamesStatus?
    }

    let policy: Policy
    let cgroupParent: String
    let counters: [String: NftCounter]
    let links: [Link]
    let addresses: [InterfaceAddress]
    /// How many elements one of our sets holds now.
    var setSize: (_ set: String, _ ipv4: Bool) -> Int = { _, _ in 0 }
    /// The socket programs' attachments and what they hold (settings and counters).
    var programs: [(SocketProgramAttachment, SocketStorage)] = []
    /// The host's uplinks as the last facts had them (forward.interfaces refuses them).
    var uplinks: Set<String> = []

    func traffic(_ name: String) -> Traffic {
        Traffic(packets: counters[name]?.packets ?? 0, bytes: counters[name]?.bytes ?? 0)
    }

    func dnsStatus(_ profile: Profile, _ parts: ProfileParts) -> DNSStatus? {
        let resolvers = parts.resolvers ?? ProfileResolvers(servers: profile.dnsServers, source: .policy)
        guard let counters = parts.dns else {
            guard let failure = parts.dnsFailure else { return nil }
            var status = DNSStatus(resolvers)
            status.failure = failure
            return status
        }
        let names = ProfileObjectNames(profile.name)
        var sizes = DomainSetSizes()
        if !profile.bypassDomains.isEmpty {
            sizes.bypass4 = setSize(names.bypassDomainSet(ipv4: true), true)
            sizes.bypass6 = setSize(names.bypassDomainSet(ipv4: false), false)
            sizes.tunneled4 = setSize(names.tunneledDomainSet(ipv4: true), true)
            sizes.tunneled6 = setSize(names.tunneledDomainSet(ipv4: false), false)
        }
        if !profile.routeDomains.isEmpty {
            sizes.route4 = setSize(names.routeDomainSet(ipv4: true), true)
            sizes.route6 = setSize(names.routeDomainSet(ipv4: false), false)
        }
        var status = DNSStatus(resolvers)
        status.failure = parts.dnsFailure
        status.bypassDomains = profile.bypassDomains.prefix(DNSStatus.listedDomains).map(\.description)
        status.bypassDomainCount = profile.bypassDomains.count
        status.routeDomains = profile.routeDomains.prefix(DNSStatus.listedDomains).map(\.description)
        status.routeDomainCount = profile.routeDomains.count
        status.answered = counters.answered
        status.forwarded = counters.forwarded
        status.failed = counters.failed
        status.dropped = counters.droppedTotal
        status.setSizes = sizes
        // What would escape the domain rules: Firefox's canary, encrypted DNS refused,
        // addresses shared by bypassed and other names.
        status.canaryAnswered = counters.canaryAnswered
        status.encryptedDNS = policy.encryptedDNS(of: profile)
        status.encryptedDNSRefused = memberStorage(profile).reduce(0) { $0 + $1.encryptedDNSRefusals }
        status.sharedAddresses = counters.sharedAddresses
        status.sharedNow = parts.sharedNow
        if var names = parts.names {
            let storage = memberStorage(profile)
            names.redirected = storage.reduce(0) { $0 + $1.namesRedirected }
            names.nscdRefused = storage.reduce(0) { $0 + $1.nscdRefused }
            status.names = names
        }
        return status
    }

    func exceptionStatus(_ profile: Profile, _ parts: ProfileParts) -> ExceptionStatus {
        var status = ExceptionStatus()
        status.allowLAN = profile.allowLAN
        status.allowMulticast = profile.allowMulticast
        status.routeNetworks = profile.routeNetworks.map(\.description)
        status.bypassExecutables = profile.bypassExecutables
        status.routeExecutables = profile.routeExecutables
        status.execMoves = parts.execMoves
        status.direct = traffic(ProfileObjectNames(profile.name).directCounter)
        return status
    }

    /// Multihop: the entry that carries a profile's transport, its tunnel's state and what
    /// of it the entry's egress chain counted (MultihopRules' counter).
    func hopStatus(_ profile: Profile) -> HopStatus? {
        guard let via = profile.via else { return nil }
        let entryInterface = policy.profile(named: via.entry)?.tunnel.interfaceName ?? via.entry
        return HopStatus(entry: via.entry, entryInterface: entryInterface,
                         entryState: Self.tunnelState(links.first { $0.name == entryInterface }),
                         carried: traffic(ProfileObjectNames(profile.name).hopCounter))
    }

    /// What the socket programs hold for the profile's member cgroups (its own and those that
    /// joined it).
    func memberStorage(_ profile: Profile) -> [SocketStorage] {
        programs.filter { $0.0.settings.guardMarks != nil && $0.0.settings.mark == profile.mark.value }.map(\.1)
    }

    /// The killswitch's drops, with the packets of members whose sockets changed their mark
    /// (dropped at the cgroup's egress, counted by the program: no bytes).
    func dropped(_ profile: Profile) -> Traffic {
        var dropped = traffic(ProfileObjectNames(profile.name).droppedCounter)
        dropped.packets += memberStorage(profile).reduce(0) { $0 + $1.guardDrops }
        return dropped
    }

    /// A profile's forward.interfaces: there and up (what arrives is routed), down, or
    /// missing, with what crossed each (nil: it lists none).
    func forwardInterfaces(_ profile: Profile) -> [ForwardInterfaceReport]? {
        guard !profile.forwardInterfaces.isEmpty else { return nil }
        return profile.forwardInterfaces.map { name in
            guard let link = links.first(where: { $0.name == name }) else { return ForwardInterfaceReport(interface: name, state: ForwardInterfaceReport.missing) }
            let counts = link.statistics
            let state = uplinks.contains(name) ? ForwardInterfaceReport.uplink : link.isUp ? ForwardInterfaceReport.routed : ForwardInterfaceReport.down
            return ForwardInterfaceReport(interface: name, state: state,
                                          received: Traffic(packets: counts.rxPackets, bytes: counts.rxBytes),
                                          sent: Traffic(packets: counts.txPackets, bytes: counts.txBytes))
        }
    }

    /// A routed namespace's traffic from its veths' host ends: what they received is what
    /// it sent.
    func withTraffic(_ routed: RoutedNamespaceReport) -> RoutedNamespaceReport {
        var routed = routed
        let ends = links.filter { routed.interfaces.contains($0.name) }
        routed.sent = Traffic(packets: ends.reduce(0) { $0 + $1.statistics.rxPackets }, bytes: ends.reduce(0) { $0 + $1.statistics.rxBytes })
        routed.received = Traffic(packets: ends.reduce(0) { $0 + $1.statistics.txPackets }, bytes: ends.reduce(0) { $0 + $1.statistics.txBytes })
        return routed
    }

    /// "up", "down" (exists, administratively down or no carrier) or "missing".
    static func tunnelState(_ link: Link?) -> String {
        link.map { $0.isUp && $0.isRunning ? "up" : "down" } ?? "missing"
    }

    /// The cgroups whose sockets are born with a mark (their programs found in the kernel at
    /// the last apply), then those held because the kernel refused them, each by path (the
    /// profile parent's programs give no mark: its hold is in `heldCgroups` alone).
    func birthMarks(held: [HeldCgroupReport]) -> [BirthMarkReport] {
        let refused = held.filter { !$0.missing.isEmpty && $0.cgroup != cgroupParent }
        let marked = programs.map(\.0).filter { attachment in attachment.settings.mark != 0 && !refused.contains { $0.cgroup == attachment.cgroup } }
            .sorted { $0.cgroup < $1.cgroup }.map { attachment in
                BirthMarkReport(cgroup: attachment.cgroup, profile: policy.profiles.first { $0.mark.value == attachment.settings.mark }?.name,
                                state: BirthMarkReport.marked, mark: hex(attachment.settings.mark))
            }
        return marked + refused.map {
            BirthMarkReport(cgroup: $0.cgroup, profile: $0.profile, state: BirthMarkReport.held, mark: nil)
        }
    }

    func report(_ daemon: Parts, parts partsOf: (Profile) -> ProfileParts) -> StatusReport {
        let profiles = policy.profiles.map { profile -> ProfileStatus in
            let parts = partsOf(profile)
            let names = ProfileObjectNames(profile.name)
            let path = profile.cgroupPath(parent: cgroupParent)
            let link = links.first { $0.name == profile.tunnel.interfaceName }
            var tunnel = TunnelStatus(interface: profile.tunnel.interfaceName, state: Self.tunnelState(link))
            if let link {
                tunnel.addresses = addresses.filter { $0.interfaceIndex == link.index }.map(\.prefix.description)
                tunnel.rxBytes = link.statistics.rxBytes
                tunnel.txBytes = link.statistics.txBytes
            }
            tunnel.transport = parts.transport
            tunnel.servers = parts.servers
            tunnel.demand = parts.demand
            // A built-in tunnel is up once it has a handshake: before that its interface is
            // up, but nothing gets through it (its demand state says so).
            if tunnel.state == "up", parts.demand?.state == "connecting" { tunnel.state = "connecting" }
            if profile.tunnel.isBuiltIn {
                tunnel.wireguard = parts.wireguard ?? WireGuardReport(publicKey: nil, listenPort: nil, peers: [], drops: [:])
                tunnel.wireguard?.reconnect = parts.reconnect
            }
            var status = ProfileStatus(name: profile.name, mark: profile.mark.value, table: profile.table,
                                       killswitch: profile.killswitch, cgroup: path, tunnel: tunnel)
            status.members = parts.members
            status.sent = traffic(names.sentCounter)
            status.received = traffic(names.receivedCounter)
            status.throughTunnel = traffic(names.tunnelCounter)
            status.droppedByKillswitch = dropped(profile)
            status.exceptions = exceptionStatus(profile, parts)
            status.dns = dnsStatus(profile, parts)
            status.joinedCgroups = parts.joinedCgroups
            status.trusted = parts.trusted
            status.via = hopStatus(profile)
            status.forwardInterfaces = forwardInterfaces(profile)
            status.containerDNSDropped = counters[ContainerRules.dnsCounter(profile.name)].map { Traffic(packets: $0.packets, bytes: $0.bytes) }
            return status
        }
        var report = StatusReport(version: daemon.version, daemonPID: daemon.pid, policyDirectory: daemon.policyDirectory,
                                  cgroupRoot: daemon.cgroupRoot, profiles: profiles)
        report.lastReload = daemon.lastReload
        report.unknownCgroupRefusals = programs.reduce(0) { $0 + $1.1.socketRefusals }
        report.refusedConnections = daemon.refusedConnections
        report.learnedRoutesPutBack = daemon.learnedRoutesPutBack
        report.sandbox = daemon.sandbox
        report.bypassMoves = daemon.bypassMoves
        report.bypassRefused = daemon.bypassRefused
        report.bypassed = traffic(bypassedCounter)
        report.systemProfile = policy.systemProfile?.name
        report.heldCgroups = daemon.unguarded.sorted { $0.key < $1.key }.map { path, state in
            HeldCgroupReport(cgroup: path, profile: profiles.first { UnguardedRules.holds(path, in: [$0.cgroup] + $0.joinedCgroups) }?.name,
                             missing: state.missing.map(\.name), reason: state.reason)
        }
        report.heldCgroups += daemon.leftBehind.keys.sorted().map { path in
            HeldCgroupReport(cgroup: path, profile: nil, missing: [],
                             reason: "its profile (\(RuntimeFacts.profileName(ofSlice: String(path.split(separator: "/").last ?? "")) ?? "?")) was removed: what is left there has no network until it exits or is moved")
        }
        report.birthMarks = birthMarks(held: report.heldCgroups)
        report.droppedHeld = traffic(UnguardedRules.counter)
        report.droppedStaleMarks = traffic(KillswitchRules.staleCounter)
        report.socketProgramsPutBack = daemon.socketProgramsPutBack
        report.heldNamespaces = daemon.heldNamespaces.map { held in
            var held = held
            held.profile = held.cgroup.flatMap { cgroup in profiles.first { UnguardedRules.holds(cgroup, in: [$0.cgroup] + $0.joinedCgroups) }?.name }
            return held
        }
        report.routedNamespaces = daemon.routedNamespaces.map(withTraffic)
        report.relayedNamespaces = daemon.relayedNamespaces
        report.dnsSteering = daemon.dnsSteering
        report.executableRules = daemon.executableRules
        return report
    }
}

extension DNSStatus {
    /// Its servers and where they came from.
    init(_ resolvers: ProfileResolvers) {
        self.init(servers: resolvers.servers.map(\.description))
        serversFrom = resolvers.sourceName
        serversFile = resolvers.file
        serversLink = resolvers.busLink
    }
}
