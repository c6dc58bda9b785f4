import Addresses
import Foundation
import Netlink
import Routing
import NetTestSupport
import Testing

/// Rules, routes, links and addresses written through our rtnetlink layer, read back with
/// iproute2 (and the other way round).
@Suite(.serialized) struct RtnetlinkTests {
    @Test func rulesRoundTripAndShowInIproute2() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        let v4 = RoutingRule(ipv4: true, priority: 7301, mark: 0x0100_0000, mask: 0x7f00_0000, table: 7301, protocolNumber: 118)
        var v6 = v4
        v6.ipv4 = false
        try namespace.within {
            let rt = try Rtnetlink()
            try rt.add(v4)
            try rt.add(v6)
            #expect(try rt.rules(ipv4: true).filter { $0.protocolNumber == 118 } == [v4])
            #expect(try rt.rules(ipv4: false).filter { $0.protocolNumber == 118 } == [v6])
            #expect(throws: NetlinkError.self) { try rt.add(v4) }
        }
        let shown = try #require(try namespace.json(["ip", "-j", "rule", "show", "priority", "7301"]) as? [[String: Any]])
        #expect(shown.count == 1)
        #expect(shown.first?["fwmark"] as? String == "0x1000000")
        #expect(shown.first?["fwmask"] as? String == "0x7f000000")
        #expect(shown.first?["table"] as? String == "7301")
        try namespace.within {
            let rt = try Rtnetlink()
            try rt.delete(v4)
            try rt.delete(v6)
            #expect(try rt.rules(ipv4: true).filter { $0.protocolNumber == 118 }.isEmpty)
        }
    }

    /// What lets unmarked lookups skip the profiles' rules: a goto past them to a nop.
    @Test func gotoAndNopRulesRoundTripAndWork() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        let rules = [true, false].flatMap { ipv4 in
            [RoutingRule(ipv4: ipv4, priority: 7301, mark: 0, mask: 0, table: 0, protocolNumber: 118, action: .nop),
             RoutingRule(ipv4: ipv4, priority: 7299, mark: 0, mask: 0x7f00_0000, table: 0, protocolNumber: 118, action: .goto(priority: 7301)),
             // Every lookup that reaches it goes to table 7400 (unreachable, below).
             RoutingRule(ipv4: ipv4, priority: 7300, mark: 0, mask: 0, table: 7400, protocolNumber: 118)]
        }
        try namespace.within {
            let rt = try Rtnetlink()
            for rule in rules { try rt.add(rule) }
            for ipv4 in [true, false] {
                #expect(Set(try rt.rules(ipv4: ipv4).filter { $0.protocolNumber == 118 }) == Set(rules.filter { $0.ipv4 == ipv4 }))
            }
        }
        let shown = try namespace.run(["ip", "-4", "rule"])
        #expect(shown.contains("7299:\tfrom all fwmark 0/0x7f000000 goto 7301 proto 118"), "\(shown)")
        #expect(shown.contains("7301:\tfrom all nop proto 118"), "\(shown)")
        // The goto works: an unmarked lookup never reaches the rule at 7300 (whose table
        // would send it nowhere), a marked one still does.
        try namespace.run(["ip", "link", "add", "vxa", "type", "veth", "peer", "name", "vxb"])
        try namespace.run(["ip", "link", "set", "vxa", "up"])
        try namespace.run(["ip", "link", "set", "vxb", "up"])
        try namespace.run(["ip", "route", "add", "default", "dev", "vxa"])
        try namespace.run(["ip", "route", "add", "unreachable", "default", "table", "7400"])
        #expect(try namespace.run(["ip", "route", "get", "192.0.2.1"]).contains("dev vxa"))
        #expect(try Command.status(namespace.enter + ["ip", "route", "get", "192.0.2.1", "mark", "0x1000000"]).status != 0,
                "a marked lookup is not skipped (table 7400 is unreachable)")
    }

    /// The selectors beyond the mark (iif, ipproto, sport, dport, uidrange) and an exact zero
    /// mark: added, read back equal (the daemon reconciles by comparing values, so a field the
    /// reader dropped would be re-added forever), listed by iproute2, deleted.
    @Test func selectorRulesRoundTripAndShowInIproute2() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        func rules(ipv4: Bool) -> [RoutingRule] {
            [RoutingRule(ipv4: ipv4, priority: 7310, mark: 0, mask: 0, table: 7310, protocolNumber: 118, inputInterface: "lo"),
             RoutingRule(ipv4: ipv4, priority: 7311, mark: 0, mask: 0, table: 7311, protocolNumber: 118, ipProtocol: 6),
             RoutingRule(ipv4: ipv4, priority: 7312, mark: 0, mask: 0, table: 7312, protocolNumber: 118, sourcePorts: 51820...51820),
             RoutingRule(ipv4: ipv4, priority: 7313, mark: 0, mask: 0, table: 7313, protocolNumber: 118, destinationPorts: 1000...2000),
             RoutingRule(ipv4: ipv4, priority: 7314, mark: 0, mask: 0, table: 7314, protocolNumber: 118, uidRange: 1000...1999),
             RoutingRule(ipv4: ipv4, priority: 7315, mark: 0x0100_0000, mask: 0x7f00_0000, table: 7315, protocolNumber: 118,
                         inputInterface: "lo", ipProtocol: 17, sourcePorts: 51820...51820, destinationPorts: 53...53, uidRange: 0...0),
             // Root's own packets skip ahead to a nop (the shape of a control-plane exception).
             RoutingRule(ipv4: ipv4, priority: 7302, mark: 0, mask: 0x7f00_0000, table: 0, protocolNumber: 118,
                         action: .goto(priority: 7316), inputInterface: "lo", uidRange: 0...0),
             RoutingRule(ipv4: ipv4, priority: 7316, mark: 0, mask: 0, table: 0, protocolNumber: 118, action: .nop),
             // Mark exactly 0: a selector, unlike mask 0.
             RoutingRule(ipv4: ipv4, priority: 7317, mark: 0, mask: 0xffff_ffff, table: 7317, protocolNumber: 118)]
        }
        #expect(rules(ipv4: true)[5].description
            == "ipv4 rule 7315: fwmark 0x1000000/0x7f000000 iif lo uidrange 0-0 ipproto 17 sport 51820 dport 53 lookup 7315 proto 118")
        #expect(rules(ipv4: false)[6].description == "ipv6 rule 7302: fwmark 0x0/0x7f000000 iif lo uidrange 0-0 goto 7316 proto 118")
        #expect(rules(ipv4: true)[3].description == "ipv4 rule 7313: all dport 1000-2000 lookup 7313 proto 118")
        try namespace.within {
            let rt = try Rtnetlink()
            for ipv4 in [true, false] {
                for rule in rules(ipv4: ipv4) { try rt.add(rule) }
                let read = try rt.rules(ipv4: ipv4).filter { $0.protocolNumber == 118 }
                #expect(read.count == rules(ipv4: ipv4).count)
                #expect(Set(read) == Set(rules(ipv4: ipv4)))
            }
        }
        for family in ["-4", "-6"] {
            let shown = try #require(try namespace.json(["ip", family, "-j", "rule", "show"]) as? [[String: Any]])
            let byPriority = Dictionary(shown.compactMap { rule in (rule["priority"] as? Int).map { ($0, rule) } },
                                        uniquingKeysWith: { first, _ in first })
            #expect(byPriority[7310]?["iif"] as? String == "lo", "\(family) \(shown)")
            #expect(byPriority[7311]?["ipproto"] as? String == "tcp", "\(family) \(shown)")
            #expect(byPriority[7312]?["sport"] as? Int == 51820, "\(family) \(shown)")
            #expect(byPriority[7313]?["dport_start"] as? Int == 1000 && byPriority[7313]?["dport_end"] as? Int == 2000, "\(family) \(shown)")
            #expect(byPriority[7314]?["uid_start"] as? Int == 1000 && byPriority[7314]?["uid_end"] as? Int == 1999, "\(family) \(shown)")
            let all = try #require(byPriority[7315], "\(family) \(shown)")
            #expect(all["fwmark"] as? String == "0x1000000" && all["fwmask"] as? String == "0x7f000000")
            #expect(all["iif"] as? String == "lo" && all["ipproto"] as? String == "udp")
            #expect(all["sport"] as? Int == 51820 && all["dport"] as? Int == 53)
            #expect(all["uid_start"] as? Int == 0 && all["uid_end"] as? Int == 0)
            #expect(all["table"] as? String == "7315")
            let skip = try #require(byPriority[7302], "\(family) \(shown)")
            #expect(skip["goto"] as? Int == 7316 && skip["iif"] as? String == "lo", "\(skip)")
            #expect(skip["uid_start"] as? Int == 0 && skip["uid_end"] as? Int == 0, "\(skip)")
            // iproute2 leaves out a mask of all ones: "fwmark 0" is the exact match.
            let zero = try #require(byPriority[7317], "\(family) \(shown)")
            #expect(zero["fwmark"] as? String == "0" && zero["fwmask"] == nil, "\(zero)")
        }
        try namespace.within {
            let rt = try Rtnetlink()
            for ipv4 in [true, false] {
                for rule in rules(ipv4: ipv4) { try rt.delete(rule) }
                #expect(try rt.rules(ipv4: ipv4).filter { $0.protocolNumber == 118 }.isEmpty)
            }
        }
        for family in ["-4", "-6"] {
            let left = try #require(try namespace.json(["ip", family, "-j", "rule", "show"]) as? [[String: Any]])
            #expect(!left.contains { ($0["priority"] as? Int).map { (7300..<7320).contains($0) } ?? false }, "\(family) \(left)")
        }
    }

    @Test func routesLinksAndAddresses() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        try namespace.run(["ip", "link", "add", "vxa", "type", "veth", "peer", "name", "vxb"])
        try namespace.within {
            let rt = try Rtnetlink()
            #expect(try rt.link(named: "nosuchlink0") == nil)
            let link = try #require(try rt.link(named: "vxa"))
            #expect(!link.isUp)
            try rt.setLink(index: link.index, up: true, mtu: 1400)
            try rt.setLink(index: try #require(try rt.link(named: "vxb")).index, up: true)
            let up = try #require(try rt.link(named: "vxa"))
            #expect(up.isUp && up.mtu == 1400)
            #expect(try rt.links().contains { $0.name == "lo" })

            try rt.add(InterfaceAddress(interfaceIndex: link.index, prefix: IPPrefix("10.99.0.2/24")!))
            try rt.add(InterfaceAddress(interfaceIndex: link.index, prefix: IPPrefix("fd99::2/64")!))
            let addresses = try rt.addresses().filter { $0.interfaceIndex == link.index }.map(\.prefix.description)
            #expect(addresses.contains("10.99.0.2/24") && addresses.contains("fd99::2/64"))

            for ipv4 in [true, false] {
                let device = Route(destination: .defaultRoute(ipv4: ipv4), table: 7301, kind: .device(index: link.index), metric: 10, protocolNumber: 118)
                let lastResort = Route(destination: .defaultRoute(ipv4: ipv4), table: 7301, kind: .unreachable, metric: .max, protocolNumber: 118)
                let network = Route(destination: IPPrefix(ipv4 ? "10.20.0.0/16" : "fd00:20::/48")!, table: 7301, kind: .blackhole, metric: 5, protocolNumber: 118)
                try rt.add(device)
                try rt.add(lastResort)
                try rt.add(network)
                // allow_lan's ranges, thrown out of the profile's table (LANRoutes).
                let lan = Route(destination: IPPrefix(ipv4 ? "10.0.0.0/8" : "fc00::/7")!, table: 7301, kind: .fallThrough, metric: .max - 1, protocolNumber: 118)
                try rt.add(lan)
                #expect(Set(try rt.routes(ipv4: ipv4, table: 7301)) == [device, lastResort, network, lan])
                #expect(try rt.routes(ipv4: ipv4, table: 7302).isEmpty)
                // Filtered by protocol in the kernel, in one table or in all of them: a
                // learned route (another protocol, another table) is not in the other's.
                let learned = Route(destination: IPPrefix(ipv4 ? "198.18.0.1/32" : "2001:db8::1/128")!, table: 7302, kind: .fallThrough, metric: 1, protocolNumber: 119)
                try rt.add(learned)
                #expect(Set(try rt.routes(ipv4: ipv4, table: nil, protocolNumber: 118)) == [device, lastResort, network, lan])
                #expect(try rt.routes(ipv4: ipv4, table: nil, protocolNumber: 119) == [learned])
                #expect(try rt.routes(ipv4: ipv4, table: 7301, protocolNumber: 119).isEmpty)
                #expect(try rt.routes(ipv4: ipv4, table: 7302) == [learned])
                try rt.delete(learned)
                try rt.delete(network)
                #expect(Set(try rt.routes(ipv4: ipv4, table: 7301)) == [device, lastResort, lan])
            }
        }
        let routes = try #require(try namespace.json(["ip", "-j", "route", "show", "table", "7301"]) as? [[String: Any]])
        #expect(routes.contains { $0["dst"] as? String == "default" && $0["dev"] as? String == "vxa" })
        #expect(routes.contains { $0["type"] as? String == "unreachable" && $0["dst"] as? String == "default" })
        #expect(routes.contains { $0["type"] as? String == "throw" && $0["dst"] as? String == "10.0.0.0/8" })
        // Deleting the interface takes its device routes; the dead end and the throw stay.
        try namespace.run(["ip", "link", "del", "vxa"])
        try namespace.within {
            let remaining = try Rtnetlink().routes(ipv4: true, table: 7301)
            #expect(Set(remaining.map(\.kind)) == [.unreachable, .fallThrough])
        }
    }

    /// Whether IPv6 is on for an interface, as its `disable_ipv6` says: where it is off the
    /// kernel refuses an IPv6 route through it, which the planner must not ask for.
    @Test func linksTellWhereIPv6IsOff() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        try namespace.run(["ip", "link", "add", "vxa", "type", "veth", "peer", "name", "vxb"])
        try namespace.run(["sysctl", "-qw", "net.ipv6.conf.vxa.disable_ipv6=1"])
        try namespace.within {
            let rt = try Rtnetlink()
            let links = Dictionary(uniqueKeysWithValues: try rt.links().map { ($0.name, $0) })
            #expect(links["vxa"]?.ipv6 == false && links["vxb"]?.ipv6 == true && links["lo"]?.ipv6 == true)
            #expect(throws: NetlinkError.self, "the kernel refuses the route the flag keeps out of the plan") {
                try rt.add(Route(destination: .defaultRoute(ipv4: false), table: 7301, kind: .device(index: links["vxa"]!.index), metric: 1, protocolNumber: 118))
            }
        }
        try namespace.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
        try namespace.within {
            let links = try Rtnetlink().links()
            #expect(links.count == 3 && links.allSatisfy { !$0.ipv6 }, "all: every interface, lo too")
        }
    }

    @Test func monitorWakesOnLinkChanges() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        let monitor = try namespace.within { try RoutingMonitor() }
        #expect(!monitor.drain())
        try namespace.run(["ip", "link", "add", "vxa", "type", "veth", "peer", "name", "vxb"])
        try eventually("a link event") { monitor.drain() }
        #expect(!monitor.drain())
    }

    /// The learned routes' protocol is quiet (vpnd adds one per DNS answer); any other
    /// route's change, in the same table, is not.
    @Test func monitorKeepsQuietAboutQuietProtocols() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        let monitor = try namespace.within { try RoutingMonitor(ignoringRoutesOf: [119]) }
        #expect(!monitor.drain())
        try namespace.run(["ip", "route", "add", "throw", "198.18.0.1", "table", "7301", "proto", "119"])
        try namespace.run(["ip", "route", "del", "throw", "198.18.0.1", "table", "7301", "proto", "119"])
        try namespace.run(["ip", "route", "add", "throw", "198.18.0.2", "table", "7301", "proto", "118"])
        try eventually("the other protocol's route") { monitor.drain() }
        try namespace.run(["ip", "route", "add", "throw", "198.18.0.3", "table", "7301", "proto", "119"])
        Thread.sleep(forTimeInterval: 0.2)
        #expect(!monitor.drain(), "a learned route's event woke it")
    }

    /// Quiet, but not lost: the quiet protocols' deleted routes are kept for the daemon,
    /// which puts back the learned routes it still wants; additions and other protocols'
    /// deletions are not.
    @Test func monitorKeepsTheQuietProtocolsDeletedRoutes() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())rt", cleanup: cleanup)
        try namespace.run(["ip", "link", "add", "vxd", "type", "veth", "peer", "name", "vxe"])
        try namespace.run(["ip", "link", "set", "vxd", "up"])
        try namespace.run(["ip", "link", "set", "vxe", "up"])
        let index = try #require(Int32(try namespace.run(["ip", "-o", "link", "show", "vxd"]).prefix { $0 != ":" }))
        let monitor = try namespace.within { try RoutingMonitor(ignoringRoutesOf: [119]) }
        #expect(monitor.drain() == false && monitor.takeDeletedQuietRoutes() == [])
        try namespace.run(["ip", "route", "add", "throw", "198.18.0.1", "table", "7301", "metric", "5", "proto", "119"])
        try namespace.run(["ip", "-6", "route", "add", "2001:db8:5::1", "dev", "vxd", "table", "7302", "metric", "3", "proto", "119"])
        try namespace.run(["ip", "route", "add", "throw", "198.18.0.2", "table", "7301", "proto", "118"])
        try namespace.run(["ip", "route", "del", "throw", "198.18.0.2", "table", "7301", "proto", "118"])
        try namespace.run(["ip", "route", "flush", "table", "all", "proto", "119"])
        try namespace.run(["ip", "-6", "route", "flush", "table", "all", "proto", "119"])
        var deleted: [Route] = []
        try eventually("both learned routes' deletions") {
            _ = monitor.drain()
            deleted += monitor.takeDeletedQuietRoutes() ?? []
            return deleted.count >= 2
        }
        #expect(Set(deleted) == [
            Route(destination: try #require(IPPrefix("198.18.0.1/32")), table: 7301, kind: .fallThrough, metric: 5, protocolNumber: 119),
            Route(destination: try #require(IPPrefix("2001:db8:5::1/128")), table: 7302, kind: .device(index: index), metric: 3, protocolNumber: 119),
        ], "\(deleted)")
        #expect(monitor.takeDeletedQuietRoutes() == [], "taken once")
    }
}
