import Addresses
import Cgroups
import Facts
import Netlink
import Plan
import Policy
import TrustedFiles
import TunnelFiles

/// `vpnctl plan --policy-dir`: the same compile as vpnd's, with facts read here by the same
/// reader (FactsReader with the tunnels' networks completed from their files; reading links
/// and cgroup ids needs no privilege). What only a running vpnd knows is said in the header.
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
        if let netlink {
            reader.network = NetworkFactsReader(netlink: netlink).read
            reader.defaultRouteInterfaces = { try (netlink.defaultRoutes(ipv4: true) + netlink.defaultRoutes(ipv4: false)).map(\.interfaceIndex) }
        }
        var header: [String] = []
        let tunnelFiles: [String: TunnelFiles.Loaded]
        do {
            tunnelFiles = try TunnelFiles.load(policy)
        } catch {
            // Their keys make them root's to read: the plan is still worth showing.
            tunnelFiles = [:]
            header.append("built-in tunnels' files not read here, so their networks are missing from allow_lan: " + "\(error)".split(separator: "\n").joined(separator: "; "))
        }
        var memory = TunnelNetworkMemory()
        let facts = try reader.read(policy, cgroupParent: cgroupParent, tunnelFiles: tunnelFiles, memory: &memory)
        header += notKnownHere(policy)
        // Every interface by name (loopback's routes too), not only the tunnels the facts hold.
        let names = Dictionary(((try? netlink?.links()) ?? Array(facts.links.values)).map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
        return header.map { "# \($0)\n" }.joined() + TrustedEvaluator.planHeader(facts)
            + PlanText.render(Planner.plan(policy, facts: facts), interfaceNames: names)
    }

    /// What vpnd adds to these facts and vpnctl cannot know (`vpnctl plan` without
    /// --policy-dir shows vpnd's own).
    static func notKnownHere(_ policy: Policy) -> [String] {
        var lines: [String] = []
        let builtIn = policy.profiles.filter(\.tunnel.isBuiltIn).map(\.tunnel.interfaceName)
        if !builtIn.isEmpty {
            lines.append("read by vpnctl, not vpnd: the transport of \(builtIn.joined(separator: ", ")) is vpnd's own socket, known to vpnd only")
        }
        let external = policy.profiles.filter { $0.allowLAN && !$0.tunnel.isBuiltIn }.map(\.tunnel.interfaceName)
        if !external.isEmpty {
            lines.append("read by vpnctl, not vpnd: networks \(external.joined(separator: ", ")) was on before and is not now stay tunneled in vpnd's plan (allow_lan), not in this one")
        }
        return lines
    }
}
