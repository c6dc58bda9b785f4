import Glibc
import Monotonic
import Addresses
import Cgroups
import Containers
import Facts
import Netlink
import Plan
import Policy
import Routing
import SocketPrograms
import TunnelFiles
import Tunnels

/// vpnd's facts: FactsReader on this machine (the reader `vpnctl plan --policy-dir` uses
/// too), with what only vpnd knows: its built-in tunnels' transports, the transports it
/// learned, the networks each tunnel was seen on.
final class MachineFacts: RuntimeFactsSource {
    let hierarchy: CgroupHierarchy
    let netlink: Rtnetlink
    let cgroupParent: String
    /// Each profile tunnel's own transport (nil: unknown).
    var transports: TunnelTransportSource?
    /// The host's networks (trusted-network rules), at a read's time.
    var network: (MonotonicInstant) -> NetworkFacts = { _ in NetworkFacts() }
    /// The DNS servers the host holds for an interface (profiles without `dns`).
    var linkResolvers: (_ interface: String, _ link: Link?) -> LinkResolvers? = { _, _ in nil }
    /// Every network a tunnel interface has been seen on (allow_lan keeps them tunneled).
    private var memory = TunnelNetworkMemory()
    /// The members' namespaces found before (a namespace's last process may be gone).
    private var containers = ContainerFinder.Memory()
    /// Where the namespaces an earlier vpnd let out are (SocketProgramSet.takeOver), until
    /// the first facts name their profiles.
    var earlierPlaces: [UInt64: ForeignNamespaces.Place] = [:]
    /// The cgroups the kernel lacked socket programs of at the last apply.
    var unguarded: () -> [String: UnguardedCgroup] = { [:] }
    /// The members' network namespaces other than vpnd's that the socket programs saw.
    var foreignNamespaces: () -> [ForeignNamespaces.Seen] = { [] }
    /// Each profile's resolve socket (empty where names are not followed).
    var resolveSockets: (Policy) -> [String: String] = { _ in [:] }

    init(hierarchy: CgroupHierarchy, netlink: Rtnetlink, cgroupParent: String) {
        self.hierarchy = hierarchy
        self.netlink = netlink
        self.cgroupParent = cgroupParent
    }

    /// The cgroup with this id (its inode) in the profiles' subtrees, if it is there.
    static func path(ofCgroup id: UInt64, under roots: [String], in hierarchy: CgroupHierarchy) -> String? {
        var pending = roots
        while let path = pending.popLast() {
            if hierarchy.id(of: path) == id { return path }
            pending += hierarchy.children(of: path).map { path + "/" + $0 }
        }
        return nil
    }

    func facts(for policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) throws -> RuntimeFacts {
        var reader = FactsReader(hierarchy: hierarchy, netlink: netlink)
        // A read of the machine is an edge: its one clock read, for what the parts decide in it.
        let now = MonotonicInstant.now()
        let builtIn = Set(tunnelFiles.keys)
        reader.transports = { [transports] interface, link in
            transports?.transport(of: interface, link: link, builtIn: builtIn, now: now) ?? TunnelTransport(source: .unknown)
        }
        reader.network = { [network] in network(now) }
        reader.linkResolvers = linkResolvers
        var facts = try reader.read(policy, cgroupParent: cgroupParent, tunnelFiles: tunnelFiles, memory: &memory)
        facts.unguardedCgroups = UnguardedRules.held(unguarded(), policy: policy, parent: cgroupParent)
        for (cookie, place) in earlierPlaces {
            if let profile = policy.profiles.first(where: { $0.index == place.profileIndex }) {
                containers.remember(cookie, namespace: place.namespace, profile: profile.name)
            }
        }
        earlierPlaces = [:]
        facts.resolveSockets = resolveSockets(policy)
        let seen = foreignNamespaces()
        if !seen.isEmpty {
            let profiles = policy.profiles.map { ($0.name, $0.cgroupPath(parent: cgroupParent)) }
                + facts.joinedCgroups.map { ($0.value.profile, $0.key) }
            let hierarchy = hierarchy
            facts.containers = ContainerFinder.find(seen, netlink: netlink, memory: &containers, cgroup: CgroupHierarchy.cgroup(ofProcess:),
                                                    profile: { cgroup in profiles.first { cgroup == $0.1 || cgroup.hasPrefix($0.1 + "/") }?.0 },
                                                    cgroupPath: { id in Self.path(ofCgroup: id, under: profiles.map(\.1), in: hierarchy) },
                                                    processes: { hierarchy.processes(in: $0) })

        }
        return facts
    }
}
