import Nftables
import Policy

/// cgroup -> mark. Membership is decided by the socket's cgroup (recorded by the kernel
/// when the socket was made), never by a mark: a member's packet gets its profile's mark
/// whatever mark its socket carries (SO_MARK needs only CAP_NET_RAW). A non-member that
/// sets a profile's mark itself is routed as that profile's. The cgroup is looked up, at
/// each depth where a profile cgroup sits, in a map whose verdict jumps to the profile's
/// member chain; that chain sets the profile's mark bits (and only those) and stores them
/// in the connection. Later packets of the connection, replies, and packets without a full
/// socket (TIME_WAIT, a listener's SYN-ACK) are recognised by the connection's mark.
/// The chain is `type route`, so the kernel routes the packet again after the mark changed.
///
/// Cgroups are known to the kernel by id, and a cgroup removed and made again under the
/// same path (systemd stopping and starting a slice) has a new one. So every id the maps
/// do not know yet, where a profile cgroup (or the parent that holds them) could be, is
/// dropped: below the parent, and beside the parent or any of its ancestors. This holds
/// while vpnd is dead; a running vpnd adds the new id within a second.
enum MembershipRules {
    static let unknownChain = "unknown_cgroup"
    static let bypassChain = "bypassed"
    static let bypassCounter = "bypassed"
    static let unknownCounter = "unknown_cgroup_dropped"

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard !policy.profiles.isEmpty else { return }
        let mask = policy.routing.markMask
        var connectionMarks: [NftElement] = []
        var inboundMarks: [NftElement] = []
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let mark = profile.mark.value
            connectionMarks.append(NftElement(key: .mark(mark), verdict: .jump(names.memberChain)))
            inboundMarks.append(NftElement(key: .mark(mark), verdict: .jump(names.inboundChain)))
            table.counters += [
                NftCounter(name: names.sentCounter, comment: "profile \(profile.name): packets sent by members"),
                NftCounter(name: names.receivedCounter, comment: "profile \(profile.name): packets received on member connections"),
            ]
            table.chains += [
                NftChain(name: names.memberChain, rules: [
                    NftRule([.setMark(clear: mask, set: mark), .setConntrackMark(clear: mask, set: mark),
                             .namedCounter(names.sentCounter), .verdict(.accept)],
                            comment: "profile \(profile.name): mark for table \(profile.table)"),
                ]),
                NftChain(name: names.inboundChain, rules: [
                    NftRule([.setMark(clear: mask, set: mark), .namedCounter(names.receivedCounter)]),
                ]),
            ]
        }
        let members = CgroupMaps(policy, facts: facts, name: "cgroup_level_", bypass: .jump(bypassChain)) { .jump(ExceptionRules.entryChain($0, in: policy)) }
        if policy.usesBypassSlice {
            table.counters.append(NftCounter(name: bypassCounter, comment: "packets of processes in vpn-bypass.slice (bypass.executables), sent direct"))
            table.chains.append(NftChain(name: bypassChain, rules: [
                NftRule([.setMark(clear: mask, set: policy.routing.bypassMark), .setConntrackMark(clear: mask, set: policy.routing.bypassMark),
                         .namedCounter(bypassCounter), .verdict(.accept)], comment: "bypass.executables: direct"),
            ]))
        }
        table.sets += members.sets
        table.sets += [
            NftSet(name: "connection_marks", key: .mark, data: .verdict, elements: connectionMarks),
            NftSet(name: "inbound_marks", key: .mark, data: .verdict, elements: inboundMarks),
        ]
        let bypass = policy.routing.bypassMark
        // A tunnel's own transport first: it must win over a connection's earlier verdict.
        var output = TransportRules.output(policy)
        // A connection decided direct before (a non-member's, a member's to the LAN) is not
        // looked at again, as long as its packets carry none of our bits but the bypass
        // mark (a built-in tunnel's own socket carries it).
        output += [0, bypass].map { value in
            NftRule([.conntrackMarkMatch(mask: mask, value: bypass, negated: false), .markMatch(mask: mask, value: value, negated: false),
                     .verdict(.accept)], comment: value == 0 ? "decided direct before" : nil)
        }
        // A socket born with its profile's mark (BirthMarks) whose connection went direct
        // (allow_lan, bypass.domains, from the LAN to its listener): its packets get the
        // bypass mark for the rest of the connection, as the first one did.
        output.append(NftRule([.conntrackMarkMatch(mask: mask, value: bypass, negated: false), .setMark(clear: mask, set: bypass), .verdict(.accept)],
                              comment: "decided direct before, a socket born marked"))
        output.append(NftRule([.conntrackMarkVerdictMap(mask: mask, map: "connection_marks")]))
        output += members.lookups(prefix: [])
        let unknown = UnknownCgroups(policy, facts: facts)
        if !unknown.isEmpty {
            table.sets += unknown.sets
            table.counters.append(NftCounter(name: unknownCounter, comment: "packets of cgroups vpnd does not know yet where a profile cgroup could be"))
            table.chains.append(NftChain(name: unknownChain, rules: [
                NftRule([.outputInterfaceName("lo", negated: false), .verdict(.accept)]),
                NftRule([.namedCounter(unknownCounter), .verdict(.drop)], comment: "fail closed until vpnd knows this cgroup"),
            ]))
            output += unknown.rules(prefix: [], target: unknownChain)
        }
        // A non-member whose socket carries a profile's mark (SO_MARK needs CAP_NET_RAW or
        // CAP_NET_ADMIN: vpnd's own DNS queries, software given a fwmark) is routed as that
        // profile's, killswitch included.
        output.append(NftRule([.markVerdictMap(mask: mask, map: "connection_marks")], comment: "a profile's mark set by the socket"))
        // The bypass mark (a built-in tunnel's own socket) keeps out of every profile,
        // route.networks included: its packets to its server must never loop into a tunnel.
        output.append(NftRule([.markMatch(mask: mask, value: bypass, negated: false), .setConntrackMark(clear: mask, set: bypass), .verdict(.accept)],
                              comment: "the bypass mark set by the socket"))
        output += ExceptionRules.routeRules(policy)
        if let system = policy.systemProfile {
            output += SystemRules.output(system, policy: policy)
        } else {
            output.append(NftRule([.setConntrackMark(clear: mask, set: bypass)], comment: "a non-member's connection: decided, direct"))
        }
        table.chains += [
            NftChain(name: "route_output", base: NftBaseChain(kind: .route, hook: .output, priority: NftBaseChain.mangle), rules: output),
            NftChain(name: "prerouting", base: NftBaseChain(kind: .filter, hook: .prerouting, priority: NftBaseChain.mangle), rules: [
                NftRule([.conntrackMarkVerdictMap(mask: mask, map: "inbound_marks")]),
            ]),
        ]
    }
}

/// Verdict maps from profile cgroups (by id, one map per depth) to a chain of the profile.
struct CgroupMaps {
    var sets: [NftSet] = []
    private var levels: [UInt32] = []

    /// `bypass`: the verdict for the bypass slice, when the policy uses it (nil: no element).
    init(_ policy: Policy, facts: RuntimeFacts, name: String, bypass: NftVerdict?, verdict: (Profile) -> NftVerdict) {
        var byLevel: [UInt32: [NftElement]] = [:]
        var entries = policy.profiles.map { profile in
            let path = profile.cgroupPath(parent: facts.cgroupParent)
            return (path, facts.cgroupIDs[path], verdict(profile))
        }
        if policy.usesBypassSlice, let bypass {
            let path = ExecutableRules.bypassCgroup(parent: facts.cgroupParent)
            entries.append((path, facts.cgroupIDs[path], bypass))
        }
        for (path, joined) in facts.joinedCgroups.sorted(by: { $0.key < $1.key }) {
            if let profile = policy.profile(named: joined.profile) { entries.append((path, joined.id, verdict(profile))) }
        }
        for (path, id, verdict) in entries {
            guard let id else { continue }
            byLevel[RuntimeFacts.level(of: path), default: []].append(NftElement(key: .cgroup(id: id, path: path), verdict: verdict))
        }
        // The depths where systemd makes the units that join: a later join there is one
        // element for the kernel, where a new depth would be a new map and rule.
        if !policy.profiles.isEmpty {
            for level in UnitCgroups.usualLevels where byLevel[level] == nil { byLevel[level] = [] }
        }
        // Deepest level first: the most specific profile cgroup wins.
        levels = byLevel.keys.sorted(by: >)
        sets = levels.map { NftSet(name: name + String($0), key: .cgroupv2, data: .verdict, elements: byLevel[$0]!) }
    }

    func lookups(prefix: [NftStatement]) -> [NftRule] {
        zip(levels, sets).map { NftRule(prefix + [.cgroupVerdictMap(level: $0, map: $1.name)]) }
    }
}

/// Where a profile cgroup could appear without vpnd knowing its id: below the profile
/// parent (any child that is not a profile's known cgroup), or beside the parent or one of
/// its ancestors (a parent removed and made again). One set per level of the parent's
/// path holds the cgroups that exist there; anything else at that level is unknown.
struct UnknownCgroups {
    /// The parent's path, component by component, with the ids of each prefix.
    private var path: [(path: String, id: UInt64)] = []
    private(set) var sets: [NftSet] = []
    /// Whether every component of the parent exists (so "below the parent" can be matched).
    private var parentExists = false

    init(_ policy: Policy, facts: RuntimeFacts) {
        guard !policy.profiles.isEmpty else { return }
        var prefix = ""
        for component in facts.cgroupParent.split(separator: "/") {
            prefix += (prefix.isEmpty ? "" : "/") + component
            // Without the listing of a level (it could not be read) no rule can be made
            // for it: an empty set would match every cgroup there.
            guard let id = facts.cgroupsAlongParent[prefix] else { break }
            let level = UInt32(path.count + 1)
            let known = facts.cgroupsAlongParent.filter { RuntimeFacts.level(of: $0.key) == level }
                .sorted { $0.key < $1.key }.map { NftElement(key: .cgroup(id: $0.value, path: $0.key)) }
            sets.append(NftSet(name: "known_level_\(level)", key: .cgroupv2, elements: known,
                               comment: "cgroups beside \(prefix) when vpnd last looked"))
            path.append((prefix, id))
        }
        parentExists = !path.isEmpty && path.last?.path == facts.cgroupParent
    }

    var isEmpty: Bool { sets.isEmpty }

    func rules(prefix: [NftStatement], target: String) -> [NftRule] {
        var rules: [NftRule] = []
        for (index, set) in sets.enumerated() {
            let level = UInt32(index + 1)
            var statements = prefix
            if index > 0 {
                statements.append(.cgroupMatch(level: level - 1, cgroup: .cgroup(id: path[index - 1].id, path: path[index - 1].path), negated: false))
            }
            statements += [.cgroupInSet(level: level, set: set.name, negated: true), .verdict(.jump(target))]
            rules.append(NftRule(statements))
        }
        if parentExists, let parent = path.last {
            rules.append(NftRule(prefix + [.cgroupMatch(level: UInt32(path.count), cgroup: .cgroup(id: parent.id, path: parent.path), negated: false),
                                           .verdict(.jump(target))],
                                 comment: "below \(parent.path) but no profile's cgroup"))
        }
        return rules
    }
}
