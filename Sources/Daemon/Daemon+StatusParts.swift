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
        // A rootless user's namespace files are in its /run/user/UID, mode 0700.
        let lookup = HostContainerLookup(netlink: rtnl, hierarchy: hierarchy, open: { path in
            let fd = (try? Privileges.withDirectoryOverride { open(path, O_RDONLY | O_CLOEXEC) }) ?? -1
            return fd < 0 ? nil : fd
        })
        let containers = ContainerStatus(containers: appliedFacts?.containers ?? [], seen: applier.foreignNamespaces(), lookup: lookup)
        let profileCgroups = policy.profiles.map { ($0.name, $0.cgroupPath(parent: options.cgroupParent)) }
            + (appliedFacts?.joinedCgroups ?? [:]).map { ($0.value.profile, $0.key) }
        let parts = StatusBuilder.Parts(version: String(cString: vpnexec_build_version()), pid: getpid(), policyDirectory: options.policyDirectory,
                                        cgroupRoot: hierarchy.mountPoint,
                                        refusedConnections: server?.refusedConnections ?? 0, learnedRoutesPutBack: learnedRoutesPutBack,
                                        sandbox: sandboxStatus, dnsSteering: dnsSteeringStatus, lastReload: lastReload,
                                        bypassMoves: executables.moves(Policy.bypassSliceName),
                                        bypassRefused: executables.bypassRefused,
                                        executableRules: executables.status(policy),
                                        unguarded: applier.unguardedCgroups, leftBehind: appliedFacts?.leftBehind ?? [:],
                                        heldNamespaces: containers.held(), routedNamespaces: containers.routed(),
                                        relayedNamespaces: containers.relayed(profileCgroups: profileCgroups), socketProgramsPutBack: applier.socketProgramsPutBack)
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
            parts.names = dns.namesStatus(of: profile.name, failure: namesFailure)
            parts.sharedNow = dns.sharedAddressReports(of: profile.name, now: now)
        }
        return parts
    }

    /// For status: where members' queries arrive, for how many profiles.
    var dnsSteeringStatus: DNSSteeringStatus? {
        dnsSteeringFailure.map(DNSSteeringStatus.init(failure:)) ?? dnsSteering.map { DNSSteeringStatus($0, ipv6: appliedFacts?.loopbackIPv6 != false) }
    }
}
