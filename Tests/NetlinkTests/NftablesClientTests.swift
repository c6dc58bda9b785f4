import Cgroups
import Addresses
import Foundation
import Netlink
import NetTestSupport
import Nftables
import Testing

/// The netlink encoder and the text renderer are two translations of the same value: a
/// table applied through libnftnl must list exactly like the rendered text fed to nft.
@Suite(.serialized) struct NftablesClientTests {
    /// A table that uses every statement the policy compiler emits.
    static func sampleTable(cgroupID: UInt64, cgroupPath: String) -> NftTable {
        let mask: UInt32 = 0x7f00_0000, mark: UInt32 = 0x0100_0000
        return NftTable(
            family: .inet, name: "vpnexec",
            counters: [NftCounter(name: "work_out", comment: "profile work: member packets"),
                       NftCounter(name: "work_drop", packets: 5, bytes: 300)],
            sets: [
                NftSet(name: "cgroup_level_2", key: .cgroupv2, data: .verdict,
                       elements: [NftElement(key: .cgroup(id: cgroupID, path: cgroupPath), verdict: .jump("member_work"))]),
                NftSet(name: "killswitch_marks", key: .mark, data: .verdict,
                       elements: [NftElement(key: .mark(mark), verdict: .jump("killswitch_work"))], comment: "profile marks"),
                NftSet(name: "lan4", key: .ipv4Address, elements: ["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12", "198.51.100.7/32", "224.0.0.0/3"]
                    .map { NftElement(key: .prefix(IPPrefix($0)!)) }, interval: true),
                NftSet(name: "lan6", key: .ipv6Address, elements: ["fe80::/10", "fc00::/7", "2001:db8::1/128", "ff00::/8"]
                    .map { NftElement(key: .prefix(IPPrefix($0)!)) }, interval: true),
                NftSet(name: "zero4", key: .ipv4Address, elements: ["0.0.0.0/8", "10.1.2.3/32"].map { NftElement(key: .prefix(IPPrefix($0)!)) }, interval: true),
                NftSet(name: "all6", key: .ipv6Address, elements: [NftElement(key: .prefix(IPPrefix("::/0")!))], interval: true),
                NftSet(name: "learned4", key: .ipv4Address, elements: [NftElement(key: .prefix(IPPrefix("192.0.2.9/32")!), timeout: 3600)],
                       comment: "from DNS answers", timeout: true),
                NftSet(name: "learned6", key: .ipv6Address, timeout: true),
                NftSet(name: "transport", key: .port, elements: [NftElement(key: .port(51820)), NftElement(key: .port(443))], comment: "ports"),
                NftSet(name: "owners", key: .uid, elements: [NftElement(key: .uid(0)), NftElement(key: .uid(1000))]),
                NftSet(name: "draining", key: .port, data: .verdict, elements: [NftElement(key: .port(51820), verdict: .jump("member_work"), timeout: 60)],
                       comment: "held a while", timeout: true),
                NftSet(name: "sources4", key: .ipv4Address, data: .verdict, elements: [NftElement(key: .prefix(IPPrefix("10.99.1.2/32")!), verdict: .jump("member_work"))]),
                // The longest name the kernel takes (15 bytes) fills the key but its last byte.
                NftSet(name: "interfaces", key: .interfaceName, data: .verdict,
                       elements: [NftElement(key: .interface("wg0"), verdict: .jump("member_work")),
                                  NftElement(key: .interface("lo"), verdict: .accept),
                                  NftElement(key: .interface("veth-0123456789"), verdict: .drop)], comment: "by interface"),
            ],
            chains: [
                NftChain(name: "route_output", base: NftBaseChain(kind: .route, hook: .output, priority: NftBaseChain.mangle), rules: [
                    NftRule([.markMatch(mask: mask, value: 0, negated: true), .verdict(.return)]),
                    NftRule([.cgroupVerdictMap(level: 2, map: "cgroup_level_2")]),
                    NftRule([.destinationInSet(ipv4: true, set: "lan4", negated: false), .verdict(.accept)]),
                    NftRule([.destinationInSet(ipv4: false, set: "lan6", negated: true), .destinationInSet(ipv4: false, set: "all6", negated: false)]),
                    NftRule([.markMatch(mask: mask, value: 0, negated: false), .sourcePortVerdictMap(.udp, map: "draining")]),
                    NftRule([.sourceVerdictMap(ipv4: true, map: "sources4")]),
                    NftRule([.sourceAddress(IPAddress("10.99.1.2")!), .verdict(.jump("member_work"))]),
                    NftRule([.sourceAddress(IPAddress("fd99:1::2")!), .verdict(.drop)]),
                    NftRule([.sourceNetwork(IPPrefix("127.77.0.0/16")!), .verdict(.drop)]),
                    NftRule([.sourceNetwork(IPPrefix("fd7f:4d::/112")!), .verdict(.drop)]),
                    NftRule([.sourceNetwork(IPPrefix("10.64.0.0/10")!), .verdict(.drop)]),
                    NftRule([.socketMarkMatch(value: 0, negated: true), .verdict(.accept)]),
                    NftRule([.socketMarkMatch(value: 0xca6c, negated: false), .verdict(.accept)]),
                    NftRule([.icmpv6Types(130...137), .verdict(.accept)]),
                    NftRule([.icmpv6Types(143...143), .verdict(.accept)]),
                    NftRule([.transportProtocol(2), .verdict(.accept)]),
                    NftRule([.udpPorts(source: 68, destination: 67), .verdict(.accept)]),
                    NftRule([.sourceInSet(ipv4: true, set: "lan4", negated: false), .sourceInSet(ipv4: true, set: "zero4", negated: true), .verdict(.accept)]),
                    NftRule([.sourceInSet(ipv4: false, set: "lan6", negated: false), .verdict(.accept)]),
                    NftRule([.sourcePortInSet(.udp, set: "transport"), .socketUserInSet("owners"), .verdict(.accept)]),
                    NftRule([.sourcePortInSet(.tcp, set: "transport"), .verdict(.drop)]),
                    NftRule([.destinationPortInSet(.udp, set: "transport"), .verdict(.accept)]),
                ]),
                NftChain(name: "inbound", base: NftBaseChain(kind: .filter, hook: .input, priority: NftBaseChain.filter), rules: [
                    NftRule([.cgroupVerdictMap(level: 2, map: "cgroup_level_2")]),
                    NftRule([.inputInterfaceName("lo", negated: true), .verdict(.drop)]),
                    NftRule([.fromLoopback, .verdict(.accept)]),
                ]),
                NftChain(name: "member_work", rules: [
                    NftRule([.namedCounter("work_out"), .verdict(.accept)], comment: "profile work"),
                ]),
                NftChain(name: "killswitch", base: NftBaseChain(kind: .filter, hook: .postrouting, priority: NftBaseChain.filter), rules: [
                    NftRule([.markVerdictMap(mask: mask, map: "killswitch_marks")]),
                    NftRule([.outputInterfaceVerdictMap(map: "interfaces")]),
                ]),
                // Forwarding without conntrack: by interface, and new TCP connections told by their flags.
                NftChain(name: "forward", base: NftBaseChain(kind: .filter, hook: .forward, priority: NftBaseChain.filter), rules: [
                    NftRule([.inputInterfaceVerdictMap(map: "interfaces")]),
                    NftRule([.tcpSynWithoutAck(negated: true), .verdict(.accept)]),
                    NftRule([.tcpSynWithoutAck(negated: false), .verdict(.drop)]),
                    NftRule([.transportProtocol(1), .verdict(.accept)]),
                    NftRule([.sourceNetwork(IPPrefix(address: .v4(0x7f4d_0000), length: 16)!), .tcpSynWithoutAck(negated: false), .reject(tcpReset: true)]),
                    NftRule([.transportProtocol(17), .reject(tcpReset: false)]),
                    NftRule([.outputInterfaceName("vpnexec-hold", negated: false), .rejectNoRoute]),
                ]),
                NftChain(name: "killswitch_work", rules: [
                    NftRule([.outputInterfaceName("wg0", negated: false), .verdict(.accept)]),
                    NftRule([.outputInterfaceName("lo", negated: false), .verdict(.accept)]),
                    NftRule([.toLoopback, .verdict(.accept)]),
                    NftRule([.namedCounter("work_drop"), .verdict(.drop)]),
                ]),
                NftChain(name: "nat", base: NftBaseChain(kind: .nat, hook: .postrouting, priority: NftBaseChain.srcnat), rules: [
                    NftRule([.markMatch(mask: mask, value: mark, negated: false), .outputInterfaceName("wg0", negated: false), .masquerade]),
                    NftRule([.outputInterfaceName("wg1", negated: true), .verdict(.goto("killswitch_work"))]),
                ]),
            ])
    }

    @Test func netlinkEncodingListsLikeTheRenderedText() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let viaNetlink = try NetworkNamespace("vx\(tag)nl", cleanup: cleanup)
        let viaCLI = try NetworkNamespace("vx\(tag)cli", cleanup: cleanup)
        let cgroups = try CgroupHierarchy.system()
        let path = "vxtest-\(tag).slice/vpn-work.slice"
        let id = try cgroups.create(path)
        cleanup.add("remove test cgroups") {
            try cgroups.remove(path)
            try cgroups.remove("vxtest-\(tag).slice")
        }
        let table = Self.sampleTable(cgroupID: id, cgroupPath: path)

        try viaNetlink.within { try NftablesClient().replace(table) }
        try NftCLI.apply(NftTextRenderer().render(table), in: viaCLI)

        let listed = withoutExpiry(try viaNetlink.run(["nft", "list", "table", "inet", "vpnexec"]))
        #expect(listed == withoutExpiry(try viaCLI.run(["nft", "list", "table", "inet", "vpnexec"])))
        // And rule by rule, the expressions themselves: the bytes nft sends for the text.
        let ours = try viaNetlink.within { try KernelRuleExpressions.list(table: "vpnexec") }
        let nfts = try viaCLI.within { try KernelRuleExpressions.list(table: "vpnexec") }
        let ruleCount: Int = table.chains.reduce(0) { $0 + $1.rules.count }
        #expect(ours.values.reduce(0) { $0 + $1.count } == ruleCount)
        let differing = Set(KernelRuleExpressions.differences(ours, nfts)).subtracting(Self.repeatedFamilyChecks(in: table))
        #expect(differing.isEmpty, "rules encoded otherwise than nft does: \(differing.sorted())")
        #expect(listed.contains("192.0.2.9 timeout 1h"), "\(listed)")
        #expect(listed.contains("socket cgroupv2 level 2 vmap @cgroup_level_2"))
        #expect(listed.contains("iif \"lo\" accept") && listed.contains("oif \"lo\" accept"), "loopback by its index: \(listed)")
        #expect(listed.contains("iifname vmap @interfaces") && listed.contains("oifname vmap @interfaces"), "\(listed)")
        #expect(listed.contains("tcp flags != syn / syn,ack accept") && listed.contains("tcp flags syn / syn,ack drop"), "\(listed)")
        #expect(listed.contains("\"veth-0123456789\" : drop"), "\(listed)")
        // The id the kernel holds is the directory's inode, whatever the mount point.
        #expect(try NftCLI.cgroupKeys(in: viaNetlink, set: "cgroup_level_2") == [id])
    }

    /// Rules ("chain #index") with two address matches of one family: nft checks the family
    /// once for both, our encoding before each (the same listing, the same packets matched).
    static func repeatedFamilyChecks(in table: NftTable) -> Set<String> {
        var rules: Set<String> = []
        for chain in table.chains {
            for (index, rule) in chain.rules.enumerated() {
                let families = rule.statements.compactMap { statement -> Bool? in
                    switch statement {
                    case let .destinationInSet(ipv4, _, _), let .sourceInSet(ipv4, _, _): return ipv4
                    default: return nil
                    }
                }
                if Set(families).count < families.count { rules.insert("\(chain.name) #\(index)") }
            }
        }
        return rules
    }

    @Test func refusedReplaceLeavesTheOldTableAndNamesTheCulprit() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())nl", cleanup: cleanup)
        let good = Self.sampleTable(cgroupID: 1, cgroupPath: "")
        var bad = good
        bad.chains[1].rules.append(NftRule([.verdict(.jump("no_such_chain"))]))

        try namespace.within { try NftablesClient().replace(good) }
        let before = try namespace.run(["nft", "list", "ruleset"])
        let error = try namespace.within { () -> NetlinkError? in
            do { try NftablesClient().replace(bad) } catch let error as NetlinkError { return error }
            return nil
        }
        let refused = try #require(error, "a jump to a missing chain must be refused")
        #expect(refused.operation.contains("no_such_chain"))
        #expect(refused.code == ENOENT)
        #expect(withoutExpiry(try namespace.run(["nft", "list", "ruleset"])) == withoutExpiry(before))
    }

    /// A reload's update (rules replaced, objects that stay kept) ends exactly where a fresh
    /// table of the new shape would, holding what the kernel held: counter values and
    /// elements learned at run time, also in a set and a counter that had to be made anew.
    @Test func updateKeepsWhatStaysAndEndsLikeTheNewTable() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let updated = try NetworkNamespace("vx\(tag)up", cleanup: cleanup)
        let fresh = try NetworkNamespace("vx\(tag)fr", cleanup: cleanup)
        let old = Self.sampleTable(cgroupID: 1, cgroupPath: "")
        var new = old
        // Rules changed, a chain gone (with the element and the rule that named it) and one
        // new, a base chain moved, a set gone, one new, one with a new comment (made anew),
        // a counter with a new comment (made anew), a map by interface made anew (new comment)
        // that rules of unchanged chains look up: those rules go before it and come back after.
        new.chains[0].rules.removeFirst()
        new.chains[0].rules.removeAll { $0.statements.contains(.sourceInSet(ipv4: true, set: "zero4", negated: true)) }
        new.chains[0].rules.append(NftRule([.transportProtocol(2), .verdict(.drop)]))
        new.chains.removeAll { $0.name == "killswitch_work" }
        new.chains.append(NftChain(name: "egress_work", rules: [NftRule([.outputInterfaceName("wg0", negated: false), .verdict(.accept)])]))
        new.chains[new.chains.firstIndex { $0.name == "nat" }!].rules[1] = NftRule([.outputInterfaceName("wg1", negated: true), .verdict(.goto("egress_work"))])
        new.chains[new.chains.firstIndex { $0.name == "inbound" }!].base?.priority = 10
        new.sets[new.sets.firstIndex { $0.name == "killswitch_marks" }!].elements = [NftElement(key: .mark(0x0100_0000), verdict: .jump("egress_work"))]
        new.sets.removeAll { $0.name == "zero4" }
        new.sets.append(NftSet(name: "extra4", key: .ipv4Address, elements: [NftElement(key: .prefix(IPPrefix("192.0.2.77/32")!))]))
        new.sets[new.sets.firstIndex { $0.name == "learned4" }!].comment = "from DNS answers, renamed"
        new.sets[new.sets.firstIndex { $0.name == "interfaces" }!].comment = "by interface, renamed"
        new.counters[0].comment = "profile work: member packets, renamed"

        let learned = [("learned4", NftElement(key: .prefix(IPPrefix("192.0.2.10/32")!), timeout: 3600)),
                       ("learned6", NftElement(key: .prefix(IPPrefix("2001:db8::5/128")!), timeout: 3600))]
        try updated.within {
            let client = try NftablesClient()
            try client.replace(old)
            for (set, element) in learned { try client.addElements([element], to: set, in: old) }
            var zeroed = new
            for index in zeroed.counters.indices { zeroed.counters[index].packets = 0; zeroed.counters[index].bytes = 0 }
            try client.update(from: old, to: zeroed)
            let counters = try client.counters(family: .inet, table: "vpnexec")
            #expect(counters["work_drop"]?.packets == 5 && counters["work_out"]?.packets == 0, "counts kept, not reset: \(counters)")
        }
        try fresh.within {
            let client = try NftablesClient()
            try client.replace(new)
            for (set, element) in learned { try client.addElements([element], to: set, in: new) }
        }
        let blocks = { (namespace: NetworkNamespace) in
            try Self.blocks(withoutExpiry(try namespace.run(["nft", "list", "table", "inet", "vpnexec"])))
        }
        let (a, b) = (try blocks(updated), try blocks(fresh))
        #expect(a == b, "only after the update: \(a.filter { !b.contains($0) }); only fresh: \(b.filter { !a.contains($0) })")
        #expect(try blocks(updated).contains { $0.contains("192.0.2.10") } && blocks(updated).contains { $0.contains("2001:db8::5") })
    }

    /// A cgroup joining a profile is one element more in a map: the update leaves every
    /// rule as it was (the kernel's handles stay). A change of one chain's rules re-adds
    /// that chain's rules only.
    @Test func anUpdateRewritesOnlyTheRulesThatChanged() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())ru", cleanup: cleanup)
        let old = Self.sampleTable(cgroupID: 1, cgroupPath: "")
        var joined = old
        let map = joined.sets.firstIndex { $0.name == "cgroup_level_2" }!
        joined.sets[map].elements.append(NftElement(key: .cgroup(id: 2, path: ""), verdict: .jump("member_work")))
        var changed = joined
        let nat = changed.chains.firstIndex { $0.name == "nat" }!
        changed.chains[nat].rules.append(NftRule([.transportProtocol(2), .verdict(.accept)]))
        func handles() throws -> [String] { try NftCLI.ruleHandles(in: namespace) }
        try namespace.within { try NftablesClient().replace(old) }
        let before = try handles()
        try namespace.within { try NftablesClient().update(from: old, to: joined) }
        #expect(try handles() == before, "rules rewritten for one more map element")
        #expect(try namespace.run(["nft", "list", "map", "inet", "vpnexec", "cgroup_level_2"]).contains("jump member_work"))
        try namespace.within { try NftablesClient().update(from: joined, to: changed) }
        let after = try handles()
        #expect(after.filter { !$0.hasPrefix("nat ") } == before.filter { !$0.hasPrefix("nat ") }, "other chains' rules rewritten")
        #expect(after.filter { $0.hasPrefix("nat ") }.count == before.filter { $0.hasPrefix("nat ") }.count + 1)
        #expect(Set(after.filter { $0.hasPrefix("nat ") }).isDisjoint(with: before.filter { $0.hasPrefix("nat ") }), "the changed chain's rules made again")
    }

    /// A map by interface name holds what was added, and what is read back from the kernel
    /// is what was added (as every set without intervals or cgroups reads back its own).
    @Test func interfaceNameMapElementsRoundTrip() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())if", cleanup: cleanup)
        let table = Self.sampleTable(cgroupID: 1, cgroupPath: "")
        let map = try #require(table.set(named: "interfaces"))
        let added = [NftElement(key: .interface("eth1"), verdict: .goto("killswitch_work")),
                     NftElement(key: .interface("wg1"), verdict: .return)]
        try namespace.within {
            let client = try NftablesClient()
            try client.replace(table)
            func held(_ name: String) throws -> Set<NftElement> {
                let set = try #require(table.set(named: name))
                return Set(try client.elements(of: name, keyType: set.key, family: .inet, table: "vpnexec"))
            }
            #expect(try held("interfaces") == Set(map.elements))
            try client.addElements(added, to: "interfaces", in: table)
            #expect(try held("interfaces") == Set(map.elements + added))
            try client.deleteElements([map.elements[0], added[1]], from: "interfaces", in: table)
            #expect(try held("interfaces") == Set(map.elements.dropFirst() + [added[0]]))
            for name in ["killswitch_marks", "transport", "owners"] {
                #expect(try held(name) == Set(table.set(named: name)!.elements), "\(name)")
            }
        }
        let listed = try namespace.run(["nft", "list", "map", "inet", "vpnexec", "interfaces"])
        #expect(listed.contains("\"eth1\" : goto killswitch_work") && !listed.contains("\"wg0\""), "\(listed)")
    }

    /// A table's listing as its objects (sets, maps, chains, counters), sorted: an update
    /// makes new objects after the old ones, a fresh table in its own order.
    static func blocks(_ listing: String) -> [String] {
        var blocks: [String] = [], current: [String] = []
        for line in listing.split(separator: "\n").map(String.init) {
            if line.hasPrefix("\t") && !line.hasPrefix("\t\t") && line != "\t}" { current = [line]; continue }
            current.append(line)
            if line == "\t}" { blocks.append(current.joined(separator: "\n")); current = [] }
        }
        return blocks.sorted()
    }

    @Test func replaceIsIdempotentAndElementsAndCountersRoundTrip() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())nl", cleanup: cleanup)
        let table = Self.sampleTable(cgroupID: 1, cgroupPath: "")
        try namespace.within {
            let client = try NftablesClient()
            #expect(try !client.tableExists(family: .inet, name: "vpnexec"))
            try client.replace(table)
            try client.replace(table)
            #expect(try client.tableExists(family: .inet, name: "vpnexec"))
            let counters = try client.counters(family: .inet, table: "vpnexec")
            #expect(counters["work_drop"]?.packets == 5)
            #expect(counters["work_drop"]?.bytes == 300)
            #expect(counters["work_out"]?.packets == 0)

            let extra = [NftElement(key: .cgroup(id: 4242, path: "x"), verdict: .jump("member_work")),
                         NftElement(key: .cgroup(id: 4343, path: "y"), verdict: .jump("member_work"))]
            try client.addElements(extra, to: "cgroup_level_2", in: table)
            #expect(try NftCLI.cgroupKeys(in: namespace, set: "cgroup_level_2") == [1, 4242, 4343])
            try client.deleteElements([extra[0]], from: "cgroup_level_2", in: table)
            #expect(try NftCLI.cgroupKeys(in: namespace, set: "cgroup_level_2") == [1, 4343])

            try client.delete(family: .inet, table: "vpnexec")
            try client.delete(family: .inet, table: "vpnexec")
            #expect(try !client.tableExists(family: .inet, name: "vpnexec"))
            #expect(try client.counters(family: .inet, table: "vpnexec").isEmpty)
        }
    }
}

/// Elements with timeouts list how long they have left, which differs by the time between
/// two listings: left out for comparisons.
func withoutExpiry(_ text: String) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
        var line = String(line)
        while let range = line.range(of: " expires ") {
            line = String(line[..<range.lowerBound]) + String(line[range.upperBound...].drop { $0 != " " && $0 != "," && $0 != "}" })
        }
        return line
    }.joined(separator: "\n")
}
