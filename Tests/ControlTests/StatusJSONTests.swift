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

    static func report(reversed: Bool) -> StatusReport {
        var drops: [String: UInt64] = [:]
        if !reversed { drops.reserveCapacity(64) }
        for reason in reversed ? reasons.reversed() : reasons { drops[reason] = UInt64(reason.count) }
        var sizes: [String: Int] = [:]
        for (index, set) in ["work_bypass4", "work_bypass6", "work_route4", "work_route6"].enumerated() { sizes[set] = index }
        if reversed { sizes = Dictionary(uniqueKeysWithValues: sizes.sorted { $0.key > $1.key }) }
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
        tunnel.wireguard?.reconnect = ReconnectReport(schedule: "backoff 5s..60s x2, at most 6/min", peers: [
            ReconnectPeerReport(publicKey: "yg3J7/zNS/m6nJgh33oYCsD/sAZ+NOJ5tDZHWRRRYlM=", attempts: 3, lastError: "no response", nextTry: 17.5),
        ])
        var dns = DNSStatus(servers: ["10.64.0.1"])
        (dns.bypassDomains, dns.bypassDomainCount, dns.routeDomains, dns.routeDomainCount) = (["bank.example"], 1, ["*.corp.example"], 1)
        (dns.answered, dns.forwarded, dns.failed, dns.dropped, dns.setSizes) = (5, 4, 1, 0, sizes)
        dns.canaryAnswered = 2
        dns.encryptedDNS = "refused"
        dns.encryptedDNSRefused = 3
        dns.sharedAddresses = 1
        dns.sharedNow = [SharedAddressReport(address: "198.51.100.30", bypassed: "bankshare.test", tunneled: "corp.test", secondsLeft: 59)]
        tunnel.transport = TransportStatus(source: "built-in", udpPort: 51820, owner: 0, pid: 42, fwmark: "0x7f000000",
                                           endpoints: ["203.0.113.2:51821"], loopDropped: Traffic(packets: 2, bytes: 296))
        tunnel.servers = ServerChoiceStatus(mode: "fastest", files: ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"], current: "/etc/vpnexec/b.conf",
                                            state: "up", reason: "fastest: handshake in 12 ms (server 1 310 ms)", roundTripsMs: [310, 12])
        tunnel.demand = TunnelDemandStatus(state: "up", since: 1_700_000_100, reason: "a member appeared", onDemand: true,
                                           idleSeconds: 600, idleLeft: 420)
        var profile = ProfileStatus(name: "work", mark: 0x0100_0000, table: 7301, killswitch: true, cgroup: "vpn.slice/vpn-work.slice", tunnel: tunnel)
        profile.members = 2
        (profile.sent, profile.received, profile.throughTunnel, profile.droppedByKillswitch) = (traffic, traffic, traffic, traffic)
        profile.dns = dns
        var matched = ["gateway_mac": "02:00:5e:00:53:0a (gateway 198.51.100.1)", "interface": "eth0"]
        if reversed { matched = Dictionary(uniqueKeysWithValues: matched.sorted { $0.key > $1.key }) }
        profile.trusted = TrustedStatus(action: "disconnect", rule: 1, ruleLocation: "/etc/vpnexec/policy.d/10-work.toml:4:13", matched: matched,
                                        since: 1_700_000_100, rules: 2,
                                        network: NetworkFacts(interface: "eth0", gateway: "198.51.100.1", gatewayMAC: "02:00:5e:00:53:0a",
                                                               searchDomains: ["home.example"]))
        profile.via = HopStatus(entry: "entry", entryInterface: "vx-entry", entryState: "up", carried: Traffic(packets: 7, bytes: 1036))
        var report = StatusReport(daemonPID: 42, policyDirectory: "/etc/vpnexec/policy.d", cgroupRoot: "/sys/fs/cgroup", profiles: [profile])
        report.sandbox = "Landlock ABI 4 (verified)"
        var rules = ExecutableRulesStatus(enforcement: ExecutableRulesStatus.beforeExec, answerDeadlineMilliseconds: 1000)
        rules.refusedAtDeadline = 1
        var link = ListedExecutableStatus(path: "/usr/bin/firefox-esr", target: "/usr/lib/firefox-esr/firefox-esr", marked: true)
        link.device = 65024
        link.inode = 1234
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
        #expect(!one.contains("\\/") && one.contains("\"mark\":\"0x1000000\"") && one.hasPrefix("{\"birthMarks\":\"off\",\"bypassMoves\":0,"))
        #expect(one.contains("\"schema\":\(StatusReport.currentSchema)"))
        let decoded = try ControlCoding.decode(StatusReport.self, from: Array(one.utf8.dropLast()))
        #expect(decoded == Self.report(reversed: false))
    }

    @Test func aMarkThatIsNotHexIsRefused() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Hexadecimal.self, from: Data("\"16777216\"".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Hexadecimal.self, from: Data("16777216".utf8)) }
    }
}
