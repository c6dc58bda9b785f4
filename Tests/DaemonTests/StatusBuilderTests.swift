import Addresses
import Control
@testable import Daemon
@testable import DNS
import Foundation
import Nftables
import Plan
import Policy
import Routing
import SocketPrograms
import Testing
import TrustedFiles
import Applying

/// `vpnctl status` from plain values, without root: StatusBuilder fed with a policy, the
/// counters and set elements of FakeKernelApplier after it applied that policy's plan, links
/// and addresses, and what the running parts report; its encoding is a golden file
/// (Tests/ControlTests/Fixtures/status-built.json, beside the status JSON's own). What the daemon gathers is proven in namespaces
/// (MetricsTests, VpnctlStatusTests...).
@Suite struct StatusBuilderTests {
    static let policyText = """
        [profile.work]
        tunnel.interface = "wg0"
        dns = ["10.64.0.1"]
        allow_lan = true
        route.networks = ["192.0.2.0/24"]
        route.domains = ["*.corp.example"]
        bypass.domains = ["bank.example"]
        route.executables = ["/usr/bin/curl"]
        bypass.executables = ["/usr/bin/ssh"]

        [profile.exit]
        tunnel.wireguard = "/etc/vpnexec/exit.conf"
        tunnel.via = "work"

        """

    static func report() throws -> StatusReport {
        let policy = try Policy.parse([PolicySource(path: "/etc/vpnexec/policy.d/10-work.toml", text: policyText)], resolver: SystemNameResolver())
        var statistics = Link.Statistics()
        statistics.rxBytes = 1024
        statistics.txBytes = 2048
        let wg0 = Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420, statistics: statistics)
        let facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-exit.slice": 102, "vpn.slice/vpn-bypass.slice": 103],
                                 cgroupsAlongParent: ["vpn.slice": 100, "system.slice": 3], links: ["wg0": wg0])
        let applier = FakeKernelApplier()
        try applier.apply(Planner.plan(policy, facts: facts))
        let work = ProfileObjectNames("work"), exit = ProfileObjectNames("exit")
        for (name, packets) in [(work.sentCounter, 3), (work.receivedCounter, 4), (work.tunnelCounter, 5), (work.droppedCounter, 6),
                                (work.directCounter, 7), (exit.hopCounter, 9), (bypassedCounter, 10)] {
            applier.counterValues[name] = NftCounter(name: name, packets: UInt64(packets), bytes: UInt64(packets * 60))
        }
        // The socket programs' counters: DoT refused at the member's sockets, sockets refused
        // in a cgroup below the parent without programs, packets of a member that re-marked.
        for attachment in applier.socketProgramsAttached ?? [] {
            var storage = SocketStorage(settings: attachment.settings, owner: 0)
            if attachment.cgroup == "vpn.slice/vpn-work.slice" { (storage.encryptedDNSRefusals, storage.guardDrops) = (8, 2) }
            if attachment.cgroup == "vpn.slice" { storage.socketRefusals = 11 }
            applier.storageValues[attachment.cgroup] = storage
        }
        try applier.addRuntimeElements([NftElement(key: .prefix(IPPrefix("203.0.113.7/32")!), timeout: 60)], to: work.routeDomainSet(ipv4: true))
        var builder = StatusBuilder(policy: policy, cgroupParent: "vpn.slice", counters: try applier.counters(), links: [wg0],
                                    addresses: [InterfaceAddress(interfaceIndex: 7, prefix: IPPrefix("10.79.0.2/24")!),
                                                InterfaceAddress(interfaceIndex: 3, prefix: IPPrefix("198.51.100.2/24")!)])
        builder.setSize = { set, ipv4 in (try? applier.elements(of: set, ipv4: ipv4).count) ?? -1 }
        builder.programs = (applier.socketProgramsAttached ?? []).compactMap { attachment in applier.socketStorage(of: attachment).map { (attachment, $0) } }
        var proxy = DNSProxyCounters()
        proxy.answered = 5
        proxy.forwarded = 4
        proxy.failed = 1
        proxy.canaryAnswered = 2
        let daemon = StatusBuilder.Parts(version: "1.2.3", pid: 42, policyDirectory: "/etc/vpnexec/policy.d", cgroupRoot: "/sys/fs/cgroup",
                                         refusedConnections: 1, learnedRoutesPutBack: 3,
                                         sandbox: SandboxStatus(state: SandboxStatus.confined, landlockABI: 4, writablePaths: ["/sys/fs/cgroup"], tcpConnectPorts: [53]),
                                         lastReload: ReloadStatus(outcome: ReloadStatus.refused, time: 1_700_000_200, lastApplied: 1_700_000_100),
                                         bypassMoves: 2, bypassRefused: 1)
        return builder.report(daemon) { profile in
            var parts = StatusBuilder.ProfileParts()
            if profile.name == "work" {
                parts.members = 2
                parts.joinedCgroups = ["user.slice/user-1000.slice/user@1000.service/app.slice/vpn-work.slice"]
                parts.execMoves = 1
                parts.dns = proxy
            } else {
                parts.resolvers = ProfileResolvers(servers: [IPAddress("10.64.0.9")!], source: .wireguardFile("/etc/vpnexec/exit.conf"))
            }
            return parts
        }
    }

    @Test func theReportOfAFixtureIsItsGoldenFile() throws {
        let golden = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ControlTests/Fixtures/status-built.json").path, encoding: .utf8)
        let encoded = String(decoding: ControlCoding.encode(try Self.report()), as: UTF8.self)
        #expect(encoded == golden, "\(encoded)")
    }

    @Test func whatTheReportSaysComesFromItsValues() throws {
        let report = try Self.report()
        let work = try #require(report.profiles.first), exit = try #require(report.profiles.last)
        #expect(report.profiles.map(\.name) == ["work", "exit"])
        #expect(work.tunnel.state == "up" && work.tunnel.addresses == ["10.79.0.2/24"] && work.tunnel.rxBytes == 1024)
        #expect(work.sent == Traffic(packets: 3, bytes: 180) && work.exceptions.direct == Traffic(packets: 7, bytes: 420))
        #expect(work.dns?.setSizes == DomainSetSizes(bypass4: 0, bypass6: 0, tunneled4: 0, tunneled6: 0, route4: 1, route6: 0),
                "the element the fake holds: \(String(describing: work.dns?.setSizes))")
        #expect(work.dns?.encryptedDNS == "refused" && work.dns?.encryptedDNSRefused == 8)
        #expect(exit.tunnel.state == "missing" && exit.tunnel.wireguard == WireGuardReport(publicKey: nil, listenPort: nil, peers: [], drops: [:]))
        #expect(exit.dns == nil, "no proxy runs for it")
        #expect(exit.via == HopStatus(entry: "work", entryInterface: "wg0", entryState: "up", carried: Traffic(packets: 9, bytes: 540)))
        #expect(work.droppedByKillswitch == Traffic(packets: 6 + 2, bytes: 360), "the killswitch's and the guard's (no bytes)")
        #expect(report.bypassed == Traffic(packets: 10, bytes: 600) && report.unknownCgroupRefusals == 11 && report.learnedRoutesPutBack == 3)
        // The cgroups whose programs the fake attached with a mark: each profile's, and the
        // bypass slice's (no profile's mark).
        #expect(report.birthMarks.map(\.cgroup) == ["vpn.slice/vpn-bypass.slice", "vpn.slice/vpn-exit.slice", "vpn.slice/vpn-work.slice"], "\(report.birthMarks)")
        #expect(report.birthMarks.map(\.profile) == [nil, "exit", "work"] && report.birthMarks.allSatisfy { $0.state == BirthMarkReport.marked })
        #expect(report.lastReload?.outcome == "refused" && report.lastReload?.lastApplied == 1_700_000_100)
    }

    /// A profile's forward.interfaces (there and up, down, missing) and a routed container's
    /// traffic come from the links' counters; its containers' dropped DNS from its counter.
    @Test func containersAndForwardInterfacesFromTheLinks() throws {
        let policy = try Policy.parse([PolicySource(path: "/etc/vpnexec/policy.d/10-work.toml", text: """
            [profile.work]
            tunnel.interface = "wg0"
            dns = ["10.64.0.1"]
            forward.interfaces = ["virbr1", "tap0", "br-lab"]

            """)], resolver: SystemNameResolver())
        func link(_ index: Int32, _ name: String, up: Bool, rx: UInt64, tx: UInt64) -> Link {
            var statistics = Link.Statistics()
            (statistics.rxPackets, statistics.rxBytes, statistics.txPackets, statistics.txBytes) = (rx, rx * 100, tx, tx * 100)
            return Link(index: index, name: name, isUp: up, isRunning: up, mtu: 1500, statistics: statistics)
        }
        let links = [link(7, "wg0", up: true, rx: 1, tx: 1), link(8, "virbr1", up: true, rx: 5, tx: 6), link(9, "tap0", up: false, rx: 0, tx: 0),
                     link(10, "ve-a", up: true, rx: 3, tx: 4), link(11, "ve-b", up: true, rx: 10, tx: 20)]
        let counter = ContainerRules.dnsCounter("work")
        let builder = StatusBuilder(policy: policy, cgroupParent: "vpn.slice", counters: [counter: NftCounter(name: counter, packets: 2, bytes: 120)],
                                    links: links, addresses: [])
        var parts = StatusBuilder.Parts(version: "1", pid: 1, policyDirectory: "/p", cgroupRoot: "/c")
        parts.routedNamespaces = [RoutedNamespaceReport(cookie: 9, profile: "work", interfaces: ["ve-a", "ve-b"])]
        let report = builder.report(parts) { _ in StatusBuilder.ProfileParts() }
        let work = try #require(report.profiles.first)
        #expect(work.forwardInterfaces == [
            ForwardInterfaceReport(interface: "br-lab", state: "missing"),
            ForwardInterfaceReport(interface: "tap0", state: "down", received: Traffic.zero, sent: Traffic.zero),
            ForwardInterfaceReport(interface: "virbr1", state: "routed", received: Traffic(packets: 5, bytes: 500), sent: Traffic(packets: 6, bytes: 600)),
        ], "by name, as the policy holds them")
        #expect(work.containerDNSDropped == Traffic(packets: 2, bytes: 120))
        let routed = try #require(report.routedNamespaces.first)
        #expect(routed.sent == Traffic(packets: 13, bytes: 1300) && routed.received == Traffic(packets: 24, bytes: 2400), "what the host ends received it sent")
    }
}
