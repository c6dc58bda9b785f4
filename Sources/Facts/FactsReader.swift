import Addresses
import Cgroups
import Netlink
import Plan
import Policy
import Routing

/// The one place that reads the machine's runtime facts for the planner (cgroup ids, the
/// cgroups along the profile parent, tunnel links), for vpnd and for `vpnctl plan`.
/// Reading needs no privilege.
public struct FactsReader {
    let hierarchy: CgroupHierarchy?
    let links: () throws -> [Link]
    let addresses: () throws -> [InterfaceAddress]

    public init(hierarchy: CgroupHierarchy?, links: @escaping () throws -> [Link], addresses: @escaping () throws -> [InterfaceAddress]) {
        self.hierarchy = hierarchy
        self.links = links
        self.addresses = addresses
    }

    /// With rtnetlink for links and addresses.
    public init(hierarchy: CgroupHierarchy?, netlink: Rtnetlink) {
        self.init(hierarchy: hierarchy, links: netlink.links, addresses: netlink.addresses)
    }

    public func read(_ policy: Policy, cgroupParent: String) throws -> RuntimeFacts {
        var facts = RuntimeFacts(cgroupParent: cgroupParent)
        if let hierarchy {
            for path in Planner.cgroups(policy, parent: cgroupParent) {
                facts.cgroupIDs[path] = hierarchy.id(of: path)
            }
            for directory in RuntimeFacts.directoriesAlong(parent: cgroupParent) {
                for child in hierarchy.children(of: directory) {
                    let path = directory.isEmpty ? child : directory + "/" + child
                    facts.cgroupsAlongParent[path] = hierarchy.id(of: path)
                }
            }
        }
        let wanted = Set(policy.profiles.map(\.tunnel.interfaceName))
        for link in try links() where wanted.contains(link.name) { facts.links[link.name] = link }
        // Only allow_lan needs to know which (private) networks the tunnels are on.
        let lan = Set(policy.profiles.filter(\.allowLAN).map(\.tunnel.interfaceName))
        if !lan.isEmpty {
            let names = Dictionary(facts.links.values.map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
            for address in try addresses() {
                guard let name = names[address.interfaceIndex], lan.contains(name),
                      !IPPrefix("fe80::/10")!.contains(address.prefix.address) else { continue }
                facts.tunnelNetworks[name, default: []].append(address.prefix.network)
            }
        }
        return facts
    }
}
