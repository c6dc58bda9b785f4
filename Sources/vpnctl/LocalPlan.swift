import Cgroups
import Facts
import Netlink
import Plan
import Policy
import TrustedFiles

/// `vpnctl plan --policy-dir`: the same compile as vpnd's, with facts read here (reading
/// links and cgroup ids needs no privilege).
enum LocalPlan {
    static func render(policyDirectory: String, cgroupParent: String) throws -> String {
        let policy = try Policy.parse(try PolicyDirectory.read(policyDirectory), resolver: SystemNameResolver())
        let netlink = try? Rtnetlink()
        var reader = FactsReader(hierarchy: try? CgroupHierarchy.system(), links: { (try? netlink?.links()) ?? [] },
                                 addresses: { (try? netlink?.addresses()) ?? [] })
        var transports = TransportReader()
        transports.holders = { interface, _ in TunnelHolder.scanHere().filter { $0.interface == interface } }
        transports.sockets = { (try? SocketDiag().sockets()) ?? [] }
        reader.transports = transports.transport(of:link:)
        if let netlink { reader.network = NetworkFactsReader(netlink: netlink).read }
        let facts = try reader.read(policy, cgroupParent: cgroupParent)
        let names = Dictionary(facts.links.values.map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
        return TrustedEvaluator.planHeader(facts) + PlanText.render(Planner.plan(policy, facts: facts), interfaceNames: names)
    }
}
