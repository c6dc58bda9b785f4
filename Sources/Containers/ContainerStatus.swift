import Control
import Plan
import Routing
import SocketPrograms

/// Status's rows for members' network namespaces (containers), made from what the last apply
/// found (ContainerFinder's `containers`) and what the socket programs saw (`seen`: each
/// namespace's dropped packets and the last process that made a socket there), with what
/// names each (its cgroup, ContainerName, its addresses) asked of `lookup`.
public struct ContainerStatus {
    private let containers: [ContainerNamespace]
    private let seen: [ForeignNamespaces.Seen]
    private let lookup: any ContainerLookup

    public init(containers: [ContainerNamespace], seen: [ForeignNamespaces.Seen], lookup: any ContainerLookup) {
        self.containers = containers
        self.seen = seen
        self.lookup = lookup
    }

    /// The members' namespaces whose packets were dropped, each with the last process that
    /// made a socket there while it lives. A routed or relayed one is not among them,
    /// whatever it had dropped before it was let out.
    public func held() -> [HeldNamespaceReport] {
        let containers = Dictionary(containers.map { ($0.cookie, $0) }, uniquingKeysWith: { a, _ in a })
        return seen.filter { $0.packets > 0 }.sorted { $0.cookie < $1.cookie }.compactMap { seen in
            var reason: String?
            let container = containers[seen.cookie]
            switch container?.state {
            case .routed, .relayed: return nil
            case let .held(why): reason = why
            case nil: reason = nil
            }
            let pid = lookup.isAlive(seen.process) ? seen.process : nil
            var held = HeldNamespaceReport(cookie: seen.cookie, packets: seen.packets, pid: pid,
                                           cgroup: pid.flatMap(lookup.cgroup(ofProcess:)) ?? container?.cgroup, reason: reason)
            describe(&held, namespace: container?.namespace, cgroup: held.cgroup)
            return held
        }
    }

    /// The members' namespaces the last apply routed, with what names them and their
    /// addresses (their traffic is StatusBuilder's, from the links).
    public func routed() -> [RoutedNamespaceReport] {
        let held = Dictionary(seen.map { ($0.cookie, $0.packets) }, uniquingKeysWith: max)
        return containers.sorted { $0.cookie < $1.cookie }.compactMap { container in
            guard case let .routed(interfaces) = container.state else { return nil }
            var routed = RoutedNamespaceReport(cookie: container.cookie, profile: container.profile, interfaces: interfaces,
                                               bridges: Array(Set(container.bridges.values)).sorted())
            describe(&routed, namespace: container.namespace, cgroup: container.cgroup)
            routed.heldPackets = held[container.cookie] ?? 0
            return routed
        }
    }

    /// The members' namespaces the last apply let out to their TUN/TAP relays, with what
    /// names them, their addresses and the process relaying each where vpnd can tell
    /// (RelayFinder), with the profile that process is in: the first of `profileCgroups`
    /// (each profile's cgroup, then the cgroups joined to one) its cgroup is or is below.
    public func relayed(profileCgroups: [(profile: String, cgroup: String)]) -> [RelayedNamespaceReport] {
        let containers = containers.sorted { $0.cookie < $1.cookie }
        guard containers.contains(where: { if case .relayed = $0.state { true } else { false } }) else { return [] }
        let relays = lookup.relays()
        // The user of each: that of the last process that made a socket there while it lives,
        // else the one user of its cgroup's processes (a rootless container's and its relay's).
        let makers = Dictionary(seen.map { ($0.cookie, $0.process) }, uniquingKeysWith: { a, _ in a })
        let paired = RelayFinder.pair(containers.compactMap { container in
            guard case let .relayed(interfaces) = container.state, let id = container.namespace else { return nil }
            var uid = makers[container.cookie].flatMap { lookup.isAlive($0) ? lookup.realUID(of: $0) : nil }
            if uid == nil, let cgroup = container.cgroup {
                let users = Set(lookup.processes(in: cgroup).compactMap(lookup.realUID(of:)))
                uid = users.count == 1 ? users.first : nil
            }
            return RelayFinder.Relayed(namespace: id, interfaces: interfaces, uid: uid)
        }, relays: relays)
        return containers.compactMap { container in
            guard case let .relayed(interfaces) = container.state else { return nil }
            var relayed = RelayedNamespaceReport(cookie: container.cookie, profile: container.profile, interfaces: interfaces)
            describe(&relayed, namespace: container.namespace, cgroup: container.cgroup)
            if let id = container.namespace, let (relay, match) = paired[id].map({ ($0.relay, $0.match) }) {
                let cgroup = lookup.cgroup(ofProcess: relay.pid)
                let profile = cgroup.flatMap { cgroup in profileCgroups.first { cgroup == $0.cgroup || cgroup.hasPrefix($0.cgroup + "/") }?.profile }
                relayed.relay = RelayProcessReport(pid: relay.pid, program: relay.command.program, match: match.rawValue, profile: profile, cgroup: cgroup)
            }
            return relayed
        }
    }

    /// What names a container's namespace in each of the rows: its id, its cgroup, the
    /// runtime and name read from that, its addresses.
    private func describe(_ report: inout some NamespaceDescription, namespace: Int32?, cgroup: String?) {
        report.namespaceID = namespace
        report.cgroup = cgroup
        let name = cgroup.flatMap(ContainerName.init(cgroup:))
        report.runtime = name?.runtime
        report.name = name?.name
        report.addresses = namespace.flatMap(lookup.addresses(inNamespace:)).map(Self.shown)
    }

    /// A namespace's addresses but its loopback's and IPv6 link-local ones.
    static func shown(_ addresses: [InterfaceAddress]) -> [String] {
        addresses.filter { address in
            let bytes = address.prefix.address.bytes
            let loopback = address.prefix.isIPv4 ? bytes.first == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
            let linkLocal = !address.prefix.isIPv4 && bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
            return !loopback && !linkLocal
        }.map(\.prefix.description)
    }
}
