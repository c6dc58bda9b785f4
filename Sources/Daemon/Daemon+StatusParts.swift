import BuildVersion
import Cgroups
import Containers
import Control
import DNS
import DNSProxies
import Glibc
import Monotonic
import Nftables
import Plan
import Policy
import ServiceSupport
import TrustedNetworks
import Tunnels

/// `vpnctl status`: what StatusBuilder makes the report from, as the kernel and vpnd's
/// running parts (tunnels, failover, DNS proxies, exec rules, trusted networks) have it now.
extension Daemon {
    func statusReport() throws -> StatusReport {
        var builder = StatusBuilder(policy: policy, cgroupParent: options.cgroupParent, counters: try applier.counters(),
                                    links: try rtnl.links(), addresses: try rtnl.addresses())
        builder.uplinks = appliedFacts?.uplinks ?? []
        builder.setSize = { [applier] set, ipv4 in (try? applier.elements(of: set, ipv4: ipv4).count) ?? 0 }
        builder.programs = (applier.socketProgramsAttached ?? []).compactMap { [applier] attachment in applier.socketStorage(of: attachment).map { (attachment, $0) } }
        let parts = StatusBuilder.Parts(version: String(cString: vpnexec_build_version()), pid: getpid(), policyDirectory: options.policyDirectory,
                                        cgroupRoot: hierarchy.mountPoint,
                                        refusedConnections: server?.refusedConnections ?? 0, learnedRoutesPutBack: learnedRoutesPutBack,
                                        sandbox: sandboxStatus, dnsSteering: dnsSteeringStatus, lastReload: lastReload,
                                        bypassMoves: executables.moves(Policy.bypassSliceName),
                                        bypassRefused: executables.bypassRefused,
                                        executableRules: executables.status(policy),
                                        unguarded: applier.unguardedCgroups, leftBehind: appliedFacts?.leftBehind ?? [:],
                                        heldNamespaces: heldNamespaces(), routedNamespaces: routedNamespaces(), relayedNamespaces: relayedNamespaces(), socketProgramsPutBack: applier.socketProgramsPutBack)
        let resolvers = profileResolvers()
        let now = MonotonicInstant.now(), wall = WallClock.now()
        return builder.report(parts) { [counters = builder.counters] in statusParts($0, counters: counters, resolvers: resolvers, now: now, wall: wall) }
    }

    private func statusParts(_ profile: Profile, counters: [String: NftCounter], resolvers: [String: ProfileResolvers],
                             now: MonotonicInstant, wall: WallClock) -> StatusBuilder.ProfileParts {
        let interface = profile.tunnel.interfaceName
        var parts = StatusBuilder.ProfileParts()
        let cgroups = reconciler.memberCgroups(of: profile, parent: options.cgroupParent)
        parts.members = cgroups.reduce(0) { $0 + hierarchy.processes(in: $1).count }
        parts.joinedCgroups = Array(cgroups.dropFirst())
        parts.execMoves = executables.moves(profile.name)
        parts.transport = TransportWatch.status(profile, transports: appliedFacts?.tunnelTransports ?? [:], counters: counters)
        parts.servers = failover.status(interface: interface)
        parts.demand = DemandFollower.status(profile, state: tunnels.demandState(interface: interface), now: now, wall: wall)
        if profile.tunnel.isBuiltIn {
            parts.wireguard = tunnels.status(interface: interface).map(WireGuardReport.init)
            parts.reconnect = tunnels.reconnectReport(interface: interface, now: now)
        }
        parts.trusted = trusted.status(profile, wall: wall)
        parts.dnsFailure = dns.failure(of: profile.name)
        parts.resolvers = resolvers[profile.name]
        if let proxy = dns.counters(of: profile.name) {
            parts.dns = proxy
            if let namesFailure {
                parts.names = NamesStatus(socket: nil, failure: namesFailure)
            } else if let counters = dns.nameCounters(of: profile.name), let socket = dns.nameSocket(of: profile.name) {
                var names = NamesStatus(socket: socket)
                (names.calls, names.answered, names.errors, names.refused) = (counters.calls, counters.answered, counters.errors, counters.refused)
                parts.names = names
            }
            parts.sharedNow = dns.sharedAddresses(of: profile.name, now: now).map {
                SharedAddressReport(address: $0.address.description, bypassed: String($0.bypassed.description.dropLast()),
                                    tunneled: String($0.tunneled.description.dropLast()),
                                    secondsLeft: UInt32(clamping: ($0.until.nanoseconds &- now.nanoseconds + 999_999_999) / 1_000_000_000))
            }
        }
        return parts
    }

    /// For status: the members' network namespaces whose packets were dropped, each with the
    /// last process that made a socket there while it lives.
    /// A routed one is not among them, whatever it had dropped before it was let out.
    func heldNamespaces() -> [HeldNamespaceReport] {
        let containers = Dictionary((appliedFacts?.containers ?? []).map { ($0.cookie, $0) }, uniquingKeysWith: { a, _ in a })
        return applier.foreignNamespaces().filter { $0.packets > 0 }.sorted { $0.cookie < $1.cookie }.compactMap { seen in
            var reason: String?
            let container = containers[seen.cookie]
            switch container?.state {
            case .routed, .relayed: return nil
            case let .held(why): reason = why
            case nil: reason = nil
            }
            let pid = ContainerFinder.isAlive(seen.process) ? seen.process : nil
            var held = HeldNamespaceReport(cookie: seen.cookie, packets: seen.packets, pid: pid,
                                           cgroup: pid.flatMap { CgroupHierarchy.cgroup(ofProcess: $0) } ?? container?.cgroup, reason: reason)
            describe(&held, namespace: container?.namespace, cgroup: held.cgroup)
            return held
        }
    }

    /// What names a container's namespace in each of status's rows (held, routed, relayed):
    /// its id, its cgroup, the runtime and name read from that, its addresses.
    func describe(_ report: inout some NamespaceDescription, namespace: Int32?, cgroup: String?) {
        report.namespaceID = namespace
        report.cgroup = cgroup
        let name = cgroup.flatMap(ContainerName.init(cgroup:))
        report.runtime = name?.runtime
        report.name = name?.name
        report.addresses = namespace.flatMap(namespaceAddresses)
    }

    /// For status: the members' namespaces the last apply routed, with what names them and
    /// their addresses (their traffic is StatusBuilder's, from the links).
    func routedNamespaces() -> [RoutedNamespaceReport] {
        let held = Dictionary(applier.foreignNamespaces().map { ($0.cookie, $0.packets) }, uniquingKeysWith: max)
        return (appliedFacts?.containers ?? []).sorted { $0.cookie < $1.cookie }.compactMap { container in
            guard case let .routed(interfaces) = container.state else { return nil }
            var routed = RoutedNamespaceReport(cookie: container.cookie, profile: container.profile, interfaces: interfaces,
                                               bridges: Array(Set(container.bridges.values)).sorted())
            describe(&routed, namespace: container.namespace, cgroup: container.cgroup)
            routed.heldPackets = held[container.cookie] ?? 0
            return routed
        }
    }

    /// A namespace's addresses but its loopback's and IPv6 link-local ones (nil: it does not
    /// answer by that id now).
    private func namespaceAddresses(_ id: Int32) -> [String]? {
        guard let addresses = try? rtnl.addresses(inNamespace: id) else { return nil }
        return addresses.filter { address in
            let bytes = address.prefix.address.bytes
            let loopback = address.prefix.isIPv4 ? bytes.first == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
            let linkLocal = !address.prefix.isIPv4 && bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
            return !loopback && !linkLocal
        }.map(\.prefix.description)
    }

    /// For status: the members' namespaces the last apply let out to their TUN/TAP relays,
    /// with what names them, their addresses and the process relaying each where vpnd can
    /// tell (RelayFinder), with the profile that process is in.
    func relayedNamespaces() -> [RelayedNamespaceReport] {
        let containers = (appliedFacts?.containers ?? []).sorted { $0.cookie < $1.cookie }
        guard containers.contains(where: { if case .relayed = $0.state { true } else { false } }) else { return [] }
        // A rootless user's namespace files are in its /run/user/UID, mode 0700.
        let relays = RelayFinder.relays(netlink: rtnl, open: { path in
            let fd = (try? Privileges.withDirectoryOverride { open(path, O_RDONLY | O_CLOEXEC) }) ?? -1
            return fd < 0 ? nil : fd
        })
        let profiles = policy.profiles.map { ($0.name, $0.cgroupPath(parent: options.cgroupParent)) }
            + (appliedFacts?.joinedCgroups ?? [:]).map { ($0.value.profile, $0.key) }
        // The user of each: that of the last process that made a socket there while it lives,
        // else the one user of its cgroup's processes (a rootless container's and its relay's).
        let makers = Dictionary(applier.foreignNamespaces().map { ($0.cookie, $0.process) }, uniquingKeysWith: { a, _ in a })
        let paired = RelayFinder.pair(containers.compactMap { container in
            guard case let .relayed(interfaces) = container.state, let id = container.namespace else { return nil }
            var uid = makers[container.cookie].flatMap { ContainerFinder.isAlive($0) ? ProcessHandle.realUID(of: $0) : nil }
            if uid == nil, let cgroup = container.cgroup {
                let users = Set(hierarchy.processes(in: cgroup).compactMap(ProcessHandle.realUID(of:)))
                uid = users.count == 1 ? users.first : nil
            }
            return RelayFinder.Relayed(namespace: id, interfaces: interfaces, uid: uid)
        }, relays: relays)
        return containers.compactMap { container in
            guard case let .relayed(interfaces) = container.state else { return nil }
            var relayed = RelayedNamespaceReport(cookie: container.cookie, profile: container.profile, interfaces: interfaces)
            describe(&relayed, namespace: container.namespace, cgroup: container.cgroup)
            if let id = container.namespace, let (relay, match) = paired[id].map({ ($0.relay, $0.match) }) {
                let cgroup = CgroupHierarchy.cgroup(ofProcess: relay.pid)
                let profile = cgroup.flatMap { cgroup in profiles.first { cgroup == $0.1 || cgroup.hasPrefix($0.1 + "/") }?.0 }
                relayed.relay = RelayProcessReport(pid: relay.pid, program: relay.command.program, match: match.rawValue, profile: profile, cgroup: cgroup)
            }
            return relayed
        }
    }

    /// For status: where members' queries arrive, for how many profiles.
    var dnsSteeringStatus: DNSSteeringStatus? {
        if let failure = dnsSteeringFailure {
            return DNSSteeringStatus(state: DNSSteeringStatus.off, addresses: [], profiles: 0, failure: failure)
        }
        guard let steering = dnsSteering else { return nil }
        let ipv6 = appliedFacts?.loopbackIPv6 != false
        return DNSSteeringStatus(state: DNSSteeringStatus.routed,
                                 addresses: [DNSSteeringPoint.address(ipv6: false).description] + (ipv6 ? [DNSSteeringPoint.address(ipv6: true).description] : []),
                                 profiles: steering.served.count, ipv6Refused: !ipv6)
    }
}

/// The fields status's container rows share (StatusBuilder fills them alike).
protocol NamespaceDescription {
    var namespaceID: Int32? { get set }
    var cgroup: String? { get set }
    var runtime: String? { get set }
    var name: String? { get set }
    var addresses: [String]? { get set }
}

extension HeldNamespaceReport: NamespaceDescription {}
extension RoutedNamespaceReport: NamespaceDescription {}
extension RelayedNamespaceReport: NamespaceDescription {}
