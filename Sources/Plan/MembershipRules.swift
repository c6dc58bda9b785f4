import Nftables
import Policy

/// cgroup -> mark. A socket's cgroup (recorded by the kernel when the socket was made) is
/// looked up, at each depth where a profile cgroup sits, in a map whose verdict jumps to
/// the profile's member chain; that chain sets the profile's mark bits (and only those)
/// and stores them in the connection. Later packets of the connection, replies, and
/// packets without a full socket (TIME_WAIT) are recognised by the connection's mark.
/// The chain is `type route`, so the kernel routes the packet again after the mark changed.
enum MembershipRules {
    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        let mask = policy.routing.markMask
        var byLevel: [UInt32: [NftElement]] = [:]
        var connectionMarks: [NftElement] = []
        var inboundMarks: [NftElement] = []
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let mark = policy.routing.mark(forIndex: profile.index)
            let path = profile.cgroupPath(parent: facts.cgroupParent)
            if let id = facts.cgroupIDs[path] {
                byLevel[UInt32(path.split(separator: "/").count), default: []]
                    .append(NftElement(key: .cgroup(id: id, path: path), verdict: .jump(names.memberChain)))
            }
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
        let levels = byLevel.keys.sorted(by: >)
        table.sets += levels.map { NftSet(name: "cgroup_level_\($0)", key: .cgroupv2, data: .verdict, elements: byLevel[$0]!) }
        table.sets += [
            NftSet(name: "connection_marks", key: .mark, data: .verdict, elements: connectionMarks),
            NftSet(name: "inbound_marks", key: .mark, data: .verdict, elements: inboundMarks),
        ]
        // Deepest level first: the most specific profile cgroup wins.
        var output = [
            NftRule([.markMatch(mask: mask, value: 0, negated: true), .verdict(.return)],
                    comment: "marked already: bypass mark or set by its socket"),
            NftRule([.conntrackMarkVerdictMap(mask: mask, map: "connection_marks")]),
        ]
        output += levels.map { NftRule([.cgroupVerdictMap(level: $0, map: "cgroup_level_\($0)")]) }
        table.chains += [
            NftChain(name: "route_output", base: NftBaseChain(kind: .route, hook: .output, priority: NftBaseChain.mangle), rules: output),
            NftChain(name: "prerouting", base: NftBaseChain(kind: .filter, hook: .prerouting, priority: NftBaseChain.mangle), rules: [
                NftRule([.conntrackMarkVerdictMap(mask: mask, map: "inbound_marks")]),
            ]),
        ]
    }
}
