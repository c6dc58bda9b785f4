import Cgroups
import Netlink
import Plan
import Policy

/// `vpnctl plan --policy-dir`: the same compile as vpnd's, with facts read here (reading
/// links and cgroup ids needs no privilege).
enum LocalPlan {
    static func render(policyDirectory: String, cgroupParent: String) throws -> String {
        let policy = try Policy.parse(try PolicyDirectory.read(policyDirectory), resolver: SystemNameResolver())
        var facts = RuntimeFacts(cgroupParent: cgroupParent)
        let hierarchy = try? CgroupHierarchy.system()
        for profile in policy.profiles {
            let path = profile.cgroupPath(parent: cgroupParent)
            facts.cgroupIDs[path] = hierarchy?.id(of: path)
        }
        let wanted = Set(policy.profiles.map(\.tunnel.interfaceName))
        for link in (try? Rtnetlink().links()) ?? [] where wanted.contains(link.name) { facts.links[link.name] = link }
        let names = Dictionary(facts.links.values.map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
        return PlanText.render(Planner.plan(policy, facts: facts), interfaceNames: names)
    }
}
