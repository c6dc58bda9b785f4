import Addresses
import Cgroups
import Facts
import Netlink
import Plan
import Policy
import Routing
import TunnelFiles

/// vpnd's facts: FactsReader on this machine, with what only vpnd knows (its built-in
/// tunnels' transports, the networks each tunnel was seen on).
final class MachineFacts: RuntimeFactsSource {
    let hierarchy: CgroupHierarchy
    let netlink: Rtnetlink
    let cgroupParent: String
    /// Each profile tunnel's own transport, given the built-in tunnels' interfaces.
    var transports: (_ builtIn: Set<String>) -> (_ interface: String, _ link: Link?) -> TunnelTransport = { _ in { _, _ in TunnelTransport(source: .unknown) } }
    /// The host's networks (trusted-network rules).
    var network: () -> NetworkFacts = { NetworkFacts() }
    /// Every network a tunnel interface has been seen on (allow_lan keeps them tunneled).
    private var seenTunnelNetworks: [String: [IPPrefix]] = [:]

    init(hierarchy: CgroupHierarchy, netlink: Rtnetlink, cgroupParent: String) {
        self.hierarchy = hierarchy
        self.netlink = netlink
        self.cgroupParent = cgroupParent
    }

    func facts(for policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) throws -> RuntimeFacts {
        var reader = FactsReader(hierarchy: hierarchy, netlink: netlink)
        reader.transports = transports(Set(tunnelFiles.keys))
        reader.network = network
        var facts = try reader.read(policy, cgroupParent: cgroupParent)
        // A tunnel's own networks stay in the tunnel (allow_lan) also while it is down or
        // gone: a built-in tunnel's from its file, any other's as last seen.
        for (interface, loaded) in tunnelFiles {
            facts.tunnelNetworks[interface, default: []] += (loaded.servers.isEmpty ? [loaded.config] : loaded.servers.map(\.config)).flatMap(\.interface.addresses).map(\.network)
        }
        for (interface, networks) in facts.tunnelNetworks {
            seenTunnelNetworks[interface] = Array(Set(networks + (seenTunnelNetworks[interface] ?? [])))
        }
        for (interface, networks) in seenTunnelNetworks where policy.profiles.contains(where: { $0.allowLAN && $0.tunnel.interfaceName == interface }) {
            facts.tunnelNetworks[interface] = IPPrefix.covering(networks + (facts.tunnelNetworks[interface] ?? []))
        }
        return facts
    }
}
