import Addresses
import Control
import ExecRules
import Netlink
import Plan

/// `vpnctl explain`: Explainer's account, with what the kernel's routing does now with the
/// cgroup's mark and the process's uid (RTM_GETROUTE, as `ip route get ADDRESS mark M uid U`) and the executable list
/// that placed it, if one did.
extension Daemon {
    /// Documentation addresses (RFC 5737, RFC 3849): routed as any address of the internet,
    /// never anyone's.
    static let explainDestinations = [IPAddress("192.0.2.1")!, IPAddress("2001:db8::1")!]

    /// As a socket of `uid` would be routed (rules may match a uid range).
    func explanation(cgroup: String, pid: Int32?, uid: UInt32) throws -> Explanation {
        let status = try statusReport()
        // A container's namespace has an id here (its veths' peers, or vpnd asked when it held it).
        let namespaceID = pid.flatMap { try? rtnl.assignedNamespaceID(ofProcess: $0) }
        var explanation = Explainer.explain(cgroup: cgroup, pid: pid, namespaceID: namespaceID, policy: policy, cgroupParent: options.cgroupParent, status: status)
        let names = Dictionary(try rtnl.links().map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
        let mark = explanation.mark.flatMap { UInt32($0.dropFirst(2), radix: 16) }
        explanation.routes = try Self.explainDestinations.map { destination in
            // Into the hold device is held, as at the unreachable route behind it.
            let found = try rtnl.lookup(destination, mark: mark, uid: uid).flatMap { names[$0.interfaceIndex] == HoldDevice.name ? nil : $0 }
            var route = ExplainedRoute(family: destination.isIPv4 ? "ipv4" : "ipv6", destination: destination.description,
                                       interface: found.map { names[$0.interfaceIndex] ?? "if\($0.interfaceIndex)" },
                                       source: found?.source?.description, gateway: found?.gateway?.description)
            route.throughTunnel = route.interface != nil && route.interface == explanation.tunnel?.interface
            return route
        }
        // Which program it runs is the inspector's to read (/proc/PID/exe is guarded like
        // ptrace, and vpnd's Landlock domain forbids that for processes outside it).
        if let pid, policy.listsExecutables, let executable = executables.reader?.executable(of: pid),
           let rule = Explainer.executableRule(executable, placement: explanation.placement, profile: explanation.profile, policy: policy) {
            explanation.rule = rule
        }
        return explanation
    }
}
