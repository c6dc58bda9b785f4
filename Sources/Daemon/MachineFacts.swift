import Addresses
import Cgroups
import Facts
import Netlink
import Plan
import Policy
import Routing
import TunnelFiles

/// vpnd's facts: FactsReader on this machine (the reader `vpnctl plan --policy-dir` uses
/// too), with what only vpnd knows: its built-in tunnels' transports, the transports it
/// learned, the networks each tunnel was seen on.
final class MachineFacts: RuntimeFactsSource {
    let hierarchy: CgroupHierarchy
    let netlink: Rtnetlink
    let cgroupParent: String
    /// Each profile tunnel's own transport, given the built-in tunnels' interfaces.
    var transports: (_ builtIn: Set<String>) -> (_ interface: String, _ link: Link?) -> TunnelTransport = { _ in { _, _ in TunnelTransport(source: .unknown) } }
    /// The host's networks (trusted-network rules).
    var network: () -> NetworkFacts = { NetworkFacts() }
    /// Every network a tunnel interface has been seen on (allow_lan keeps them tunneled).
    private var memory = TunnelNetworkMemory()
    /// The cgroups the kernel lacked socket programs of at the last apply.
    var unguarded: () -> [String: UnguardedCgroup] = { [:] }

    init(hierarchy: CgroupHierarchy, netlink: Rtnetlink, cgroupParent: String) {
        self.hierarchy = hierarchy
        self.netlink = netlink
        self.cgroupParent = cgroupParent
    }

    func facts(for policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) throws -> RuntimeFacts {
        var reader = FactsReader(hierarchy: hierarchy, netlink: netlink)
        reader.transports = transports(Set(tunnelFiles.keys))
        reader.network = network
        var facts = try reader.read(policy, cgroupParent: cgroupParent, tunnelFiles: tunnelFiles, memory: &memory)
        facts.unguardedCgroups = UnguardedRules.held(unguarded(), policy: policy, parent: cgroupParent)
        return facts
    }
}
