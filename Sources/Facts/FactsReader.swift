import Addresses
import Glibc
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
    /// Each profile tunnel's own transport (TransportReader), given its link if there is
    /// one; nil: not read.
    public var transports: ((_ interface: String, _ link: Link?) -> TunnelTransport)?
    /// The host's networks, for profiles with trusted-network rules; nil: not read (connect).
    public var network: (() -> NetworkFacts)?
    /// The DNS servers the host holds for an interface (LinkResolversReader), read for the
    /// tunnels of profiles without `dns` that are not built-in; nil: not read.
    public var linkResolvers: ((_ interface: String, _ link: Link?) -> LinkResolvers?)?
    /// The interface indexes of the main table's default routes (IPv4 and IPv6), read when
    /// a profile lists forward.interfaces; nil: not read.
    public var defaultRouteInterfaces: (() throws -> [Int32])?

    public init(hierarchy: CgroupHierarchy?, links: @escaping () throws -> [Link], addresses: @escaping () throws -> [InterfaceAddress]) {
        self.hierarchy = hierarchy
        self.links = links
        self.addresses = addresses
    }

    /// With rtnetlink for links and addresses.
    public init(hierarchy: CgroupHierarchy?, netlink: Rtnetlink) {
        self.init(hierarchy: hierarchy, links: netlink.links, addresses: netlink.addresses)
        defaultRouteInterfaces = { try (netlink.defaultRoutes(ipv4: true) + netlink.defaultRoutes(ipv4: false)).map(\.interfaceIndex) }
    }

    /// `groups`: a user's groups (the user database), to decide which unit cgroups join.
    public func read(_ policy: Policy, cgroupParent: String, groups: UnitCgroups.Groups = SystemGroups.of) throws -> RuntimeFacts {
        var facts = RuntimeFacts(cgroupParent: cgroupParent)
        if let hierarchy {
            for path in Planner.cgroups(policy, parent: cgroupParent) {
                facts.cgroupIDs[path] = hierarchy.id(of: path)
            }
            if !policy.profiles.isEmpty {
                // Once per user and read: the user database may be a directory service.
                var known: [UInt32: [UInt32]] = [:]
                let groupsOnce = { (uid: UInt32) -> [UInt32] in
                    if let cached = known[uid] { return cached }
                    let found = groups(uid)
                    known[uid] = found
                    return found
                }
                for path in Self.unitCgroups(in: hierarchy) {
                    switch UnitCgroups.decide(path, policy: policy, parent: cgroupParent, groups: groupsOnce) {
                    case let .member(profile)?:
                        if let id = hierarchy.id(of: path) { facts.joinedCgroups[path] = RuntimeFacts.JoinedCgroup(profile: profile, id: id) }
                    case let .refused(profile, uid, rule)?:
                        facts.refusedCgroups[path] = "uid \(uid) may not use profile \"\(profile)\": \(rule)"
                    case nil:
                        break
                    }
                }
            }
            // The path guard, and system mode's DNS programs, sit on the root cgroup.
            facts.rootCgroupID = hierarchy.id(of: "")
            // A removed profile's cgroup with processes in it: they are held.
            let named = Set(policy.profiles.map(\.name) + [Policy.bypassSliceName])
            for child in hierarchy.children(of: cgroupParent) {
                guard let name = RuntimeFacts.profileName(ofSlice: child), !named.contains(name) else { continue }
                let path = cgroupParent + "/" + child
                if !hierarchy.processes(in: path).isEmpty, let id = hierarchy.id(of: path) { facts.leftBehind[path] = id }
            }
            for directory in RuntimeFacts.directoriesAlong(parent: cgroupParent) {
                for child in hierarchy.children(of: directory) {
                    let path = directory.isEmpty ? child : directory + "/" + child
                    facts.cgroupsAlongParent[path] = hierarchy.id(of: path)
                }
            }
        }
        if let network, policy.profiles.contains(where: { !$0.trusted.isEmpty }) { facts.trusted = TrustedEvaluator.verdicts(policy, network()) }
        // The hold device too: the routes of what is held go through it (HoldDevice).
        let wanted = Set(policy.profiles.map(\.tunnel.interfaceName) + [HoldDevice.name])
        let all = try links()
        if let defaultRouteInterfaces, policy.profiles.contains(where: { !$0.forwardInterfaces.isEmpty }) {
            let indexes = Set(try defaultRouteInterfaces())
            facts.uplinks = Set(all.filter { indexes.contains($0.index) }.map(\.name))
        }
        for link in all where wanted.contains(link.name) { facts.links[link.name] = link }
        facts.loopbackIPv6 = all.first { $0.name == "lo" }?.ipv6 ?? true
        if let transports {
            for interface in wanted.sorted() where interface != HoldDevice.name { facts.tunnelTransports[interface] = transports(interface, facts.links[interface]) }
        }
        if let linkResolvers {
            for profile in policy.profiles where profile.dnsServers.isEmpty && !profile.tunnel.isBuiltIn {
                let interface = profile.tunnel.interfaceName
                if facts.linkResolvers[interface] == nil, let found = linkResolvers(interface, facts.links[interface]) { facts.linkResolvers[interface] = found }
            }
        }
        // The tunnels' own addresses (nothing with one as its source leaves elsewhere), and
        // for allow_lan the (private) networks the tunnels are on.
        let lan = Set(policy.profiles.filter(\.allowLAN).map(\.tunnel.interfaceName))
        if !facts.links.isEmpty {
            let names = Dictionary(facts.links.values.map { ($0.index, $0.name) }, uniquingKeysWith: { a, _ in a })
            for address in try addresses() {
                guard let name = names[address.interfaceIndex], !IPPrefix("fe80::/10")!.contains(address.prefix.address) else { continue }
                facts.tunnelAddresses[name, default: []].append(address.prefix.address)
                if lan.contains(name) { facts.tunnelNetworks[name, default: []].append(address.prefix.network) }
            }
        }
        return facts
    }

    /// Where systemd puts units that can join a profile by name: every cgroup in the users'
    /// trees (user.slice, their managers' slices and scopes), and the system manager's
    /// direct children of system.slice (transient app scopes).
    public static func unitDirectories(in hierarchy: CgroupHierarchy) -> [String] {
        var directories = ["user.slice", "system.slice"].filter { hierarchy.id(of: $0) != nil }
        var index = 0
        while index < directories.count {
            let directory = directories[index]
            index += 1
            // Deep enough for user@UID.service/app.slice/vpn-work.slice/app-x.scope.
            guard directory.hasPrefix("user.slice"), RuntimeFacts.level(of: directory) < 8 else { continue }
            directories += hierarchy.children(of: directory).map { directory + "/" + $0 }
        }
        return directories
    }

    static func unitCgroups(in hierarchy: CgroupHierarchy) -> [String] {
        var paths = unitDirectories(in: hierarchy).filter { $0.hasPrefix("user.slice/") }
        paths += hierarchy.children(of: "system.slice").map { "system.slice/" + $0 }
        return paths.filter { UnitCgroups.isCandidate(String($0.split(separator: "/").last ?? "")) }
    }
}

/// A user's groups from the user database (primary and supplementary).
public enum SystemGroups {
    public static func of(_ uid: UInt32) -> [UInt32] {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &record, &buffer, buffer.count, &result) == 0, result != nil, let name = record.pw_name else { return [] }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, record.pw_gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, record.pw_gid, &groups, &count) >= 0 else { return [record.pw_gid] }
        }
        return Array(groups.prefix(Int(count)))
    }
}
