import Addresses
import Control
import Foundation
import Testing

/// `vpnctl status --json` is a contract for scripts: this report's encoding is the golden
/// file, byte for byte, however its dictionaries were built (their iteration order differs
/// with insertion history and from process to process).
@Suite struct StatusJSONTests {
    static let reasons = ["malformed", "badMAC", "replay", "unknownPeer", "notAllowedIP", "noRoute", "noSession",
                          "staleTimestamp", "rateLimited", "queueFull", "tunRefused"]

    /// A report with every field set (StatusReferenceTests holds it to that): every optional
    /// has a value, every list and map an element.
    static func report(reversed: Bool) -> StatusReport {
        var drops: [String: UInt64] = [:]
        if !reversed { drops.reserveCapacity(64) }
        for reason in reversed ? reasons.reversed() : reasons { drops[reason] = UInt64(reason.count) }
        let traffic = Traffic(packets: 3, bytes: 180)
        var peer = WireGuardPeerReport(publicKey: "yg3J7/zNS/m6nJgh33oYCsD/sAZ+NOJ5tDZHWRRRYlM=", allowedIPs: ["0.0.0.0/0", "::/0"])
        (peer.endpoint, peer.latestHandshake, peer.rxBytes, peer.txBytes) = ("203.0.113.2:51821", 1_700_000_000, 100, 200)
        var tunnel = TunnelStatus(interface: "vx-work", state: "up")
        tunnel.addresses = ["10.79.0.2/24", "fd79::2/64"]
        tunnel.rxBytes = 1024
        tunnel.txBytes = 2048
        tunnel.wireguard = WireGuardReport(publicKey: "q25R9+NKgrE4RKhY3eZCR2F3CCFEAhnMteveSxIp0hM=", listenPort: 51820, peers: [
            peer,
        ], drops: drops)
        tunnel.wireguard?.reconnect = ReconnectReport(
            schedule: ReconnectScheduleStatus(kind: ReconnectScheduleStatus.wireguard, minSeconds: 5, maxSeconds: 5, stormLimitPerMinute: 12, giveUpSeconds: 90),
            peers: [ReconnectPeerReport(publicKey: "yg3J7/zNS/m6nJgh33oYCsD/sAZ+NOJ5tDZHWRRRYlM=", attempts: 3, lastError: ReconnectPeerReport.sendFailed,
                                        lastErrorDetail: "Network is unreachable", nextTry: 17.5)])
        var dns = DNSStatus(servers: ["10.64.0.1"])
        dns.failure = "no resolvers"
        (dns.serversFrom, dns.serversFile) = ("wg-quick", "/etc/vpnexec/work.conf")
        dns.serversLink = 5
        (dns.bypassDomains, dns.bypassDomainCount, dns.routeDomains, dns.routeDomainCount) = (["bank.example"], 1, ["*.corp.example"], 1)
        (dns.answered, dns.forwarded, dns.failed, dns.dropped) = (5, 4, 1, 0)
        dns.setSizes = DomainSetSizes(bypass4: 0, bypass6: 1, tunneled4: 2, tunneled6: 3, route4: 4, route6: 5)
        dns.canaryAnswered = 2
        dns.encryptedDNS = DNSStatus.encryptedRefused
        dns.encryptedDNSRefused = 3
        dns.sharedAddresses = 1
        dns.sharedNow = [SharedAddressReport(address: "198.51.100.30", bypassed: "bankshare.test", tunneled: "corp.test", secondsLeft: 59)]
        dns.names = NamesStatus(socket: "/run/vpnexec/resolve/work", failure: "the kernel has no bpf_sock_addr_set_sun_path")
        (dns.names!.redirected, dns.names!.nscdRefused, dns.names!.calls, dns.names!.answered, dns.names!.errors, dns.names!.refused) = (6, 1, 6, 5, 1, 0)
        tunnel.transport = TransportStatus(source: "built-in", udpPort: 51820, owner: 0, pid: 42, fwmark: "0x7f000000",
                                           endpoints: ["203.0.113.2:51821"], guardedUDPPorts: [51820], guardedTCPPorts: [443],
                                           detail: "vpnd's own engine", loopDropped: Traffic(packets: 2, bytes: 296))
        tunnel.servers = ServerChoiceStatus(mode: "fastest", files: ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"], current: "/etc/vpnexec/b.conf",
                                            state: "up", reason: "fastest: handshake in 12 ms (server 1 310 ms)", roundTripsMs: [310, 12])
        tunnel.demand = TunnelDemandStatus(state: "up", since: 1_700_000_100, reason: "a member appeared", onDemand: true,
                                           idleSeconds: 600, idleLeft: 420, held: "up")
        var profile = ProfileStatus(name: "work", mark: 0x0100_0000, table: 7301, killswitch: true, cgroup: "vpn.slice/vpn-work.slice", tunnel: tunnel)
        profile.members = 2
        profile.joinedCgroups = ["user.slice/user-1000.slice/user@1000.service/app.slice/vpn-work.slice"]
        (profile.sent, profile.received, profile.throughTunnel, profile.droppedByKillswitch) = (traffic, traffic, traffic, traffic)
        profile.exceptions.allowLAN = true
        profile.exceptions.routeNetworks = ["192.0.2.0/24"]
        profile.exceptions.bypassExecutables = ["/usr/bin/ssh"]
        profile.exceptions.routeExecutables = ["/usr/bin/curl"]
        profile.dns = dns
        var matched = ["gateway_mac": "02:00:5e:00:53:0a (gateway 198.51.100.1)", "interface": "eth0"]
        if reversed { matched = Dictionary(uniqueKeysWithValues: matched.sorted { $0.key > $1.key }) }
        profile.trusted = TrustedStatus(action: "disconnect", rule: 1, ruleLocation: "/etc/vpnexec/policy.d/10-work.toml:4:13", matched: matched,
                                        since: 1_700_000_100, rules: 2,
                                        network: NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: "02:00:5e:00:53:0a",
                                                               searchDomains: ["home.example"], ssid: "home"),
                                        heldBy: "entry", heldByAction: "block")
        profile.via = HopStatus(entry: "entry", entryInterface: "vx-entry", entryState: "up", carried: Traffic(packets: 7, bytes: 1036))
        profile.forwardInterfaces = [ForwardInterfaceReport(interface: "virbr1", state: ForwardInterfaceReport.routed, received: Traffic(packets: 10, bytes: 1200),
                                                            sent: Traffic(packets: 11, bytes: 1300))]
        profile.containerDNSDropped = Traffic(packets: 2, bytes: 120)
        var report = StatusReport(version: "1.2.3", daemonPID: 42, policyDirectory: "/etc/vpnexec/policy.d", cgroupRoot: "/sys/fs/cgroup", profiles: [profile])
        report.lastReload = ReloadStatus(outcome: ReloadStatus.refused, time: 1_700_000_200, lastApplied: 1_700_000_100)
        (report.unknownCgroupRefusals, report.refusedConnections, report.learnedRoutesPutBack) = (1, 2, 3)
        report.sandbox = SandboxStatus(state: SandboxStatus.confined, landlockABI: 4, writablePaths: ["/sys/fs/cgroup", "/proc/sys/net"],
                                       tcpConnectPorts: [53], reason: "verified")
        report.birthMarks = [BirthMarkReport(cgroup: "vpn.slice/vpn-work.slice", profile: "work", state: BirthMarkReport.marked, mark: "0x1000000")]
        report.dnsSteering = DNSSteeringStatus(state: DNSSteeringStatus.routed, addresses: ["127.77.0.0"], profiles: 1, ipv6Refused: true,
                                               failure: "none")
        (report.bypassMoves, report.bypassRefused, report.bypassed) = (4, 5, Traffic(packets: 6, bytes: 360))
        report.heldCgroups = [HeldCgroupReport(cgroup: "vpn.slice/vpn-work.slice/held.scope", profile: "work", missing: ["vx_create"],
                                               reason: "Operation not permitted")]
        var held = HeldNamespaceReport(cookie: 4097, packets: 12, pid: 4242, cgroup: "vpn.slice/vpn-work.slice/machine-lab.scope", profile: "work",
                                       reason: "its interface mv0 (macvlan) does not lead to the host")
        (held.namespaceID, held.runtime, held.name, held.addresses) = (2, "machine", "lab", ["198.51.100.50/24"])
        report.heldNamespaces = [held]
        var routed = RoutedNamespaceReport(cookie: 4099, profile: "work", interfaces: ["ve-box"], bridges: ["podman0"])
        (routed.namespaceID, routed.cgroup, routed.runtime, routed.name) = (3, "vpn.slice/vpn-work.slice/libpod-4f1c2d3e5a6b.scope", "podman", "4f1c2d3e5a6b")
        (routed.addresses, routed.sent, routed.received, routed.heldPackets) = (["10.88.0.2/16", "fd88::2/64"], Traffic(packets: 9, bytes: 900),
                                                                                Traffic(packets: 8, bytes: 1600), 4)
        report.routedNamespaces = [routed]
        var relayed = RelayedNamespaceReport(cookie: 4101, profile: "work", interfaces: ["tap0"])
        (relayed.namespaceID, relayed.cgroup, relayed.runtime, relayed.name) = (5, "vpn.slice/vpn-work.slice/libpod-9a8b7c6d5e4f.scope", "podman", "9a8b7c6d5e4f")
        relayed.addresses = ["10.0.2.100/24"]
        relayed.relay = RelayProcessReport(pid: 4300, program: "slirp4netns", profile: "work", cgroup: "vpn.slice/vpn-work.slice")
        report.relayedNamespaces = [relayed]
        (report.droppedHeld, report.droppedStaleMarks, report.socketProgramsPutBack) = (Traffic(packets: 1, bytes: 60), Traffic(packets: 2, bytes: 120), 7)
        report.systemProfile = "work"
        var rules = ExecutableRulesStatus(enforcement: ExecutableRulesStatus.beforeExec, answerDeadlineMilliseconds: 1000)
        rules.fanotifyUnavailable = "none"
        rules.execEventsUnavailable = "not in the initial network namespace"
        rules.refusedAtDeadline = 1
        var link = ListedExecutableStatus(path: "/usr/bin/firefox-esr", target: "/usr/lib/firefox-esr/firefox-esr", marked: true)
        link.device = 65024
        link.inode = 1234
        link.problem = "none"
        var missing = ListedExecutableStatus(path: "/usr/bin/steam", marked: false)
        missing.problem = "does not exist"
        rules.files = [link, missing]
        report.executableRules = rules
        return report
    }

    @Test func encodingIsTheGoldenFileAndRoundTrips() throws {
        let golden = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/status.json").path, encoding: .utf8)
        let one = String(decoding: ControlCoding.encode(Self.report(reversed: false)), as: UTF8.self)
        let other = String(decoding: ControlCoding.encode(Self.report(reversed: true)), as: UTF8.self)
        #expect(one == golden, "\(one)")
        #expect(other == golden, "\(other)")
        #expect(!one.contains("\\/") && one.contains("\"mark\":\"0x1000000\"") && one.hasPrefix("{\"birthMarks\":[{\"cgroup\":"))
        #expect(one.contains("\"schema\":\(StatusReport.currentSchema)"))
        let decoded = try ControlCoding.decode(StatusReport.self, from: Array(one.utf8.dropLast()))
        #expect(decoded == Self.report(reversed: false))
    }

    @Test func aMarkThatIsNotHexIsRefused() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Hexadecimal.self, from: Data("\"16777216\"".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Hexadecimal.self, from: Data("16777216".utf8)) }
    }
}
