import Glibc
import Netlink
import Plan
import Routing
import SocketPrograms

/// Finds how each member's network namespace other than vpnd's reaches the host, from what
/// the socket programs saw (a socket made there, by which process) and the interfaces on
/// both sides. A namespace is routed when every interface it has but loopback is a veth
/// whose other end is ours (on its own, or a bridge's port): then all it sends to the world
/// arrives here on those ends, where ContainerRules makes it the profile's. A namespace
/// whose every interface but loopback is a TUN/TAP device (rootless podman's slirp4netns or
/// pasta) is relayed: what it sends reaches only the process reading each device, which
/// sends it on with sockets of its own, a member's when that process is one; it is let out
/// with no rule of ours. Anything else (a macvlan or ipvlan on an uplink, a veth to a third
/// namespace, a TAP beside a veth) keeps it held at its cgroup, with the reason for status.
public enum ContainerFinder {
    /// The namespaces found before, by cookie: the id this namespace gives each, its
    /// profile and the cgroup its process was in. The programs keep only the last process
    /// that made a socket in a namespace, which may be gone a moment later (a DNS lookup's);
    /// the namespace is known by its id for as long as it answers by it.
    public struct Memory: Sendable {
        var known: [UInt64: Place] = [:]

        struct Place {
            var namespace: Int32
            var profile: String
            var cgroup: String?
        }

        public init() {}

        /// A namespace an earlier vpnd let out, where it said it is (the profile by name).
        public mutating func remember(_ cookie: UInt64, namespace: Int32, profile: String) {
            if known[cookie] == nil { known[cookie] = Place(namespace: namespace, profile: profile) }
        }
    }

    /// Every seen namespace of a profile's: by its last process while that lives in a
    /// profile's cgroup, else as `memory` knows it. `cgroup(of:)`: the process's cgroup;
    /// `profile(of:)`: the profile that cgroup is of, or nil. The dump of our links comes
    /// first: it gives each namespace a veth of ours reaches its id, which a process's
    /// namespace is then asked by.
    ///
    /// A namespace whose last process is gone and that vpnd never knew (a container whose
    /// sockets are all brief: a lookup in a loop) is looked for in the cgroup that process
    /// was in (`cgroupPath(of:)` by id, `processes(in:)`): taken when it is the only
    /// namespace other than vpnd's and those known that the cgroup's processes are in, for
    /// the only such cookie of that cgroup. A wrong pairing (the cookie's namespace gone, a
    /// new one there) routes a namespace of that profile's processes all the same and lets
    /// out a cookie no socket has any more: nothing leaves outside the tunnel.
    public static func find(_ seen: [ForeignNamespaces.Seen], netlink: Rtnetlink, memory: inout Memory,
                            cgroup: (Int32) -> String?, profile: (String) -> String?,
                            cgroupPath: (UInt64) -> String? = { _ in nil }, processes: (String) -> [Int32] = { _ in [] }) -> [ContainerNamespace] {
        let hostLinks = (try? netlink.links()) ?? []
        var found: [ContainerNamespace] = []
        var known: [UInt64: Memory.Place] = [:]
        var unplaced: [ForeignNamespaces.Seen] = []
        for seen in seen {
            var place = memory.known[seen.cookie]
            // The process's namespace now, which is the cookie's unless the process moved:
            // only root moves a process to a namespace with links of its own, and then at
            // worst routes a namespace of a member that root built.
            if isAlive(seen.process), let path = cgroup(seen.process), let name = profile(path) {
                if let id = (try? netlink.namespaceID(ofProcess: seen.process)) ?? nil {
                    place = Memory.Place(namespace: id, profile: name, cgroup: path)
                } else {
                    found.append(ContainerNamespace(cookie: seen.cookie, profile: name, state: classify(namespace: nil, inside: [], hostLinks: hostLinks).state,
                                                    cgroup: path))
                    continue
                }
            }
            guard let place else {
                unplaced.append(seen)
                continue
            }
            // A namespace that no longer answers by its id is gone.
            guard let inside = try? netlink.links(inNamespace: place.namespace) else { continue }
            known[seen.cookie] = place
            let (state, bridges) = classify(namespace: place.namespace, inside: inside, hostLinks: hostLinks)
            found.append(ContainerNamespace(cookie: seen.cookie, profile: place.profile, state: state, bridges: bridges,
                                            namespace: place.namespace, cgroup: place.cgroup))
        }
        let own = (try? netlink.namespaceID(ofProcess: getpid())) ?? nil
        for (id, entries) in Dictionary(grouping: unplaced.filter { $0.cgroup != 0 }, by: \.cgroup) where entries.count == 1 {
            guard let path = cgroupPath(id), let name = profile(path) else { continue }
            let namespaces = Set(processes(path).compactMap { (try? netlink.namespaceID(ofProcess: $0)) ?? nil })
                .subtracting(known.values.map(\.namespace)).subtracting(own.map { [$0] } ?? [])
            guard namespaces.count == 1, let namespace = namespaces.first, let inside = try? netlink.links(inNamespace: namespace) else { continue }
            let place = Memory.Place(namespace: namespace, profile: name, cgroup: path)
            known[entries[0].cookie] = place
            let (state, bridges) = classify(namespace: namespace, inside: inside, hostLinks: hostLinks)
            found.append(ContainerNamespace(cookie: entries[0].cookie, profile: name, state: state, bridges: bridges, namespace: namespace, cgroup: path))
        }
        memory.known = known
        return found
    }

    /// Pure: routed by the host ends of its veths (with the bridge each is a port of),
    /// relayed by its TUN/TAP devices alone, or held and why. `namespace`: the id this
    /// namespace gives it (nil: none, no link of ours reaches it).
    public static func classify(namespace: Int32?, inside: [Link], hostLinks: [Link]) -> (state: ContainerNamespace.State, bridges: [String: String]) {
        guard let namespace else { return (.held(why: "no interface of it reaches the host"), [:]) }
        let interfaces = inside.sorted(by: { $0.index < $1.index }).filter { !isLoopback($0) }
        // Only TUN/TAP devices: a packet sent there is read by whoever holds the device's
        // descriptor and goes no further in the kernel (docs/limitations.md: that process is
        // trusted as any a member hands data to is).
        if !interfaces.isEmpty, interfaces.allSatisfy({ $0.kind == "tun" }) {
            return (.relayed(interfaces: interfaces.map(\.name)), [:])
        }
        let ends = hostLinks.filter { $0.kind == "veth" && $0.peerNamespace == namespace }
        var routed: [String] = [], bridges: [String: String] = [:]
        for link in interfaces {
            guard link.kind == "veth", let end = ends.first(where: { $0.peerIndex == link.index }) else {
                return (.held(why: "its interface \(link.name) (\(link.kind ?? "a device")) does not lead to the host"), [:])
            }
            if let master = end.master {
                guard let bridge = hostLinks.first(where: { $0.index == master }), bridge.kind == "bridge" else {
                    return (.held(why: "its veth's host end \(end.name) is enslaved to a device that is not a bridge"), [:])
                }
                bridges[end.name] = bridge.name
            }
            routed.append(end.name)
        }
        guard !routed.isEmpty else { return (.held(why: "it has no interface but loopback"), [:]) }
        return (.routed(interfaces: routed), bridges)
    }

    /// Whether process `pid` (> 0) exists. vpnd keeps no CAP_KILL: probing another user's
    /// process (a rootless container's) fails with EPERM, which says it exists.
    public static func isAlive(_ pid: Int32) -> Bool {
        pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)
    }

    /// A namespace's loopback is always its first interface.
    static func isLoopback(_ link: Link) -> Bool { link.index == 1 && link.kind == nil }
}
