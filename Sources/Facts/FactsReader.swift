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

    public init(hierarchy: CgroupHierarchy?, links: @escaping () throws -> [Link]) {
        self.hierarchy = hierarchy
        self.links = links
    }

    public func read(_ policy: Policy, cgroupParent: String) throws -> RuntimeFacts {
        var facts = RuntimeFacts(cgroupParent: cgroupParent)
        if let hierarchy {
            for profile in policy.profiles {
                let path = profile.cgroupPath(parent: cgroupParent)
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
        return facts
    }
}
