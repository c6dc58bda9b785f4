import Addresses
import Facts
import Foundation
import Netlink
import NetTestSupport
import Plan
import Testing

/// What trusted-network rules are compared with, read in a namespace: the main table's
/// default route of lowest metric, its gateway's MAC once the kernel resolved it (vpnd's
/// reader asks it to), the search domains of the resolv.conf it is given.
@Suite(.serialized) struct NetworkFactsReaderTests {
    @Test func readsTheDefaultRouteItsGatewaysMACAndTheSearchDomains() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let host = try NetworkNamespace("vx\(tag)h", cleanup: cleanup)
        let routers = try NetworkNamespace("vx\(tag)r", cleanup: cleanup)
        // Two links: the default route of metric 50 is through the second.
        for (n, mac) in [(1, "02:00:5e:00:53:01"), (2, "02:00:5e:00:53:02")] {
            try Command.run(["ip", "link", "add", "vx\(tag)h\(n)", "netns", host.name, "type", "veth", "peer", "name", "vx\(tag)r\(n)", "netns", routers.name])
            try routers.run(["ip", "link", "set", "vx\(tag)r\(n)", "address", mac, "up"])
            try routers.run(["ip", "addr", "add", "198.51.10\(n).1/24", "dev", "vx\(tag)r\(n)"])
            try host.run(["ip", "addr", "add", "198.51.10\(n).2/24", "dev", "vx\(tag)h\(n)"])
            try host.run(["ip", "link", "set", "vx\(tag)h\(n)", "up"])
        }
        try host.run(["ip", "route", "add", "default", "via", "198.51.101.1", "metric", "100"])
        try host.run(["ip", "route", "add", "default", "via", "198.51.102.1", "metric", "50"])
        let resolvConf = NSTemporaryDirectory() + "vx-\(tag)-resolv.conf"
        try "nameserver 192.0.2.53\nsearch Home.Example. lan\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        cleanup.add("remove \(resolvConf)") { try? FileManager.default.removeItem(atPath: resolvConf) }

        let first = try host.within {
            var reader = NetworkFactsReader(netlink: try Rtnetlink(), resolvConf: resolvConf)
            reader.resolve = true
            return reader.read()
        }
        // Nothing was sent to the gateway yet: no neighbour entry, so no MAC (and a request to resolve it).
        #expect(first == NetworkFacts(interface: "vx\(tag)h2", gateway: "198.51.102.1", searchDomains: ["home.example", "lan"]))
        try eventually("the kernel to resolve the gateway it was asked for") {
            try host.within { NetworkFactsReader(netlink: try Rtnetlink(), resolvConf: resolvConf).read().gatewayMAC } == "02:00:5e:00:53:02"
        }
        #expect(try host.run(["ip", "neigh", "show", "198.51.102.1"]).contains("lladdr 02:00:5e:00:53:02"))
        // Without `resolve` (vpnctl plan) nothing is asked for.
        try host.run(["ip", "route", "del", "default", "via", "198.51.102.1"])
        let other = try host.within { NetworkFactsReader(netlink: try Rtnetlink(), resolvConf: resolvConf).read() }
        #expect(other.interface == "vx\(tag)h1" && other.gatewayMAC == nil && other.ssid == nil)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try !host.run(["ip", "neigh", "show", "198.51.101.1"]).contains("lladdr"))
        try host.run(["ip", "route", "del", "default"])
        #expect(try host.within { NetworkFactsReader(netlink: try Rtnetlink(), resolvConf: "/nonexistent").read() } == NetworkFacts())
    }
}
