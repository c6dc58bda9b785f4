import Addresses
import Control
import Glibc
import Netlink

/// `vpnctl explain`: Explainer's account, with what the kernel's routing does now with the
/// cgroup's mark (RTM_GETROUTE, as `ip route get ADDRESS mark M`) and whether the process
/// lives in another network namespace.
extension Daemon {
    /// Documentation addresses (RFC 5737, RFC 3849): routed as any address of the internet,
    /// never anyone's.
    static let explainDestinations = [IPAddress("192.0.2.1")!, IPAddress("2001:db8::1")!]

    func explanation(cgroup: String, pid: Int32?) throws -> Explanation {
        let status = try statusReport()
        var explanation = Explainer.explain(cgroup: cgroup, pid: pid, policy: policy, cgroupParent: options.cgroupParent, status: status)
        let names = Dictionary(try rtnl.links().map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
        let mark = explanation.mark.flatMap { UInt32($0.dropFirst(2), radix: 16) }
        explanation.routes = try Self.explainDestinations.map { destination in
            let found = try rtnl.lookup(destination, mark: mark)
            var route = ExplainedRoute(family: destination.isIPv4 ? "ipv4" : "ipv6", destination: destination.description,
                                       interface: found.map { names[$0.interfaceIndex] ?? "if\($0.interfaceIndex)" },
                                       source: found?.source?.description, gateway: found?.gateway?.description)
            route.throughTunnel = route.interface != nil && route.interface == explanation.tunnel?.interface
            return route
        }
        if let pid, explanation.namespace == nil, let theirs = Self.networkNamespace(of: "/proc/\(pid)/ns/net"),
           theirs != Self.networkNamespace(of: "/proc/self/ns/net") {
            explanation.namespace = ExplainedNamespace(state: ExplainedNamespace.unknown)
        }
        return explanation
    }

    /// "net:[INODE]"; nil where it cannot be read (another user's process while vpnd lacks
    /// ptrace access to it).
    static func networkNamespace(of path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
