import Control
@testable import StatusPresentation
import Testing

/// `vpnctl status` for people: what is held first, then each profile's tunnel, members,
/// traffic and killswitch; internals only with --verbose; counts in the number they take.
@Suite struct StatusTextTests {
    static let now = 1_700_000_300.0

    /// One profile through wg0, up, with two members; the host's internals all set.
    static func report(members: Int = 2, state: String = "up") -> StatusReport {
        var tunnel = TunnelStatus(interface: "wg0", state: state)
        tunnel.addresses = state == "up" ? ["10.64.0.2/32"] : []
        (tunnel.rxBytes, tunnel.txBytes) = (2048, 1024)
        tunnel.transport = TransportStatus(source: "wg-socket", udpPort: 51820, owner: 0, pid: 42, endpoints: ["203.0.113.2:51820"])
        var dns = DNSStatus(servers: ["10.64.0.1"])
        (dns.answered, dns.forwarded) = (12, 10)
        (dns.bypassDomains, dns.bypassDomainCount) = (["bank.example"], 1)
        dns.setSizes = DomainSetSizes(bypass4: 3, bypass6: 0, tunneled4: 0, tunneled6: 0)
        var profile = ProfileStatus(name: "work", mark: 0x0100_0000, table: 7301, killswitch: true, cgroup: "vpn.slice/vpn-work.slice", tunnel: tunnel)
        profile.members = members
        (profile.sent, profile.throughTunnel) = (Traffic(packets: 1, bytes: 60), Traffic(packets: 1, bytes: 60))
        profile.received = Traffic(packets: 2, bytes: 3000)
        profile.dns = dns
        var report = StatusReport(version: "1.2.3", daemonPID: 42, policyDirectory: "/etc/vpnexec/policy.d", cgroupRoot: "/sys/fs/cgroup", profiles: [profile])
        report.sandbox = SandboxStatus(state: SandboxStatus.confined, landlockABI: 7, writablePaths: ["/run/vpnexec"], tcpConnectPorts: [53])
        report.birthMarks = [BirthMarkReport(cgroup: "vpn.slice/vpn-work.slice", profile: "work", state: BirthMarkReport.marked, mark: "0x1000000")]
        report.dnsSteering = DNSSteeringStatus(state: DNSSteeringStatus.routed, addresses: ["127.77.0.0", "fd7f:4d::"], profiles: 1)
        (report.socketProgramsPutBack, report.learnedRoutesPutBack, report.unknownCgroupRefusals, report.refusedConnections) = (1, 1, 1, 1)
        return report
    }

    /// JSON's demand states are tokens; the text says them in words, as vpnd's log does.
    @Test func aDemandTokenIsSaidInWords() {
        let idle = TunnelDemandStatus(state: "down-on-demand", since: Self.now - 42, reason: "vpnd started; no member or traffic", onDemand: true)
        #expect(StatusText.demand(idle, now: Self.now) == "  demand    down (on demand) since 42 s ago (vpnd started; no member or traffic); up at the first member or packet")
        let held = TunnelDemandStatus(state: "down-held", since: Self.now - 60, reason: "vpnctl down", onDemand: true, held: "down")
        #expect(StatusText.demand(held, now: Self.now).hasPrefix("  demand    down (vpnctl down) since 1 min ago (vpnctl down); held down by vpnctl"))
        let up = TunnelDemandStatus(state: "up", since: Self.now - 5, reason: "a member appeared", onDemand: false)
        #expect(StatusText.demand(up, now: Self.now) == "  demand    up since 5 s ago (a member appeared)")
    }

    @Test func theDefaultIsWhatAPersonAsks() {
        #expect(StatusText.render(Self.report(), now: Self.now) == """
            profile work: killswitch on
              tunnel    wg0: up (10.64.0.2/32), rx 2.0 KiB, tx 1.0 KiB
              members   2 processes
              sent      1 packet, 60 B; through the tunnel 1 packet, 60 B
              received  2 packets, 2.9 KiB
              dropped   0 packets by the killswitch
              dns       proxy: resolvers 10.64.0.1; answered 12, forwarded 10, failed 0, dropped 0
              bypass    domains bank.example

            """)
    }

    @Test func verboseSaysHowToo() {
        let text = StatusText.render(Self.report(), verbose: true, now: Self.now)
        for line in ["vpnd pid 42, policy /etc/vpnexec/policy.d, cgroup2 at /sys/fs/cgroup", "sandbox: Landlock ABI 7",
                         "sockets born marked: 1 cgroup: vpn.slice/vpn-work.slice",
                         "DNS steering: UDP and TCP queries routed to 127.77.0.0 and fd7f:4d:: for 1 profile",
                         "profile work: mark 0x1000000, table 7301, killswitch on", "  transport udp 51820 (wg-socket, pid 42, uid 0)",
                         "  members   2 processes in vpn.slice/vpn-work.slice", "  learned   bypass4 3, bypass6 0, tunneled4 0, tunneled6 0",
                         "socket programs: 1 put back", "learned routes: 1 put back", "unknown cgroups: 1 socket refused",
                         "control socket: 1 connection refused"] {
            #expect(text.contains(line), "verbose: \(line)\n\(text)")
        }
        let plain = StatusText.render(Self.report(), now: Self.now)
        for line in ["vpnd pid", "sandbox", "born marked", "DNS steering", "mark 0x", "table 7301", "transport", "vpn.slice", "learned", "put back",
                         "unknown cgroups", "control socket"] {
            #expect(!plain.contains(line), "not by default: \(line)\n\(plain)")
        }
    }

    /// Something blocked leads, in both views; DNS steering that is off is one of those.
    @Test func heldLinesComeFirst() {
        var report = Self.report()
        report.heldCgroups = [HeldCgroupReport(cgroup: "vpn.slice/vpn-work.slice", profile: "work", missing: ["vx_create"], reason: "EPERM")]
        report.dnsSteering = DNSSteeringStatus(state: DNSSteeringStatus.off, addresses: [], profiles: 0, failure: "lo has no 127.77.0.0")
        let plain = StatusText.render(report, now: Self.now).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(plain[0].hasPrefix("HELD: profile work, vpn.slice/vpn-work.slice: the kernel does not have its socket programs (vx_create)"))
        #expect(plain[1] == "DNS steering: off: lo has no 127.77.0.0; members' DNS queries are refused (none leaves)")
        let verbose = StatusText.render(report, verbose: true, now: Self.now).split(separator: "\n")
        #expect(verbose[0].hasPrefix("vpnd pid 42") && verbose[1].hasPrefix("HELD: profile work"))
    }

    /// A relayed container, under its profile after the members: its tap, who reads it (by
    /// pid, with the profile that process is in, or none), or that vpnd cannot tell.
    @Test func aRelayedContainerSaysWhoCarriesIt() {
        var report = Self.report()
        var podman = RelayedNamespaceReport(cookie: 4101, profile: "work", interfaces: ["tap0"])
        (podman.runtime, podman.name, podman.addresses) = ("podman", "4f1c2d3e5a6b", ["10.0.2.100/24"])
        podman.relay = RelayProcessReport(pid: 4300, program: "slirp4netns", profile: "work", cgroup: "vpn.slice/vpn-work.slice")
        var stray = RelayedNamespaceReport(cookie: 4102, profile: "work", interfaces: ["tap0"])
        stray.relay = RelayProcessReport(pid: 4301, program: "pasta", match: RelayProcessReport.alone, cgroup: "user.slice")
        report.relayedNamespaces = [podman, stray, RelayedNamespaceReport(cookie: 4103, profile: "work", interfaces: ["tap0"])]
        let lines = StatusText.render(report, now: Self.now).split(separator: "\n").map(String.init)
        let members = lines.firstIndex { $0.hasPrefix("  members ") } ?? -1
        #expect(members >= 0 && Array(lines[(members + 1)...].prefix(3)) == [
            "  container podman 4f1c2d3e5a6b, network namespace 4101: relayed: pid 4300 (slirp4netns) reads its tap0, in profile work: "
                + "its sockets are that profile's member's, through its tunnel and held by its killswitch; 10.0.2.100/24",
            "  container network namespace 4102: relayed: pid 4301 (pasta), the only relay it can be, reads its tap0, in NO profile: what it relays leaves as that process's own connections, outside every tunnel",
            "  container network namespace 4103: relayed: what it sends to its tap0 is read by a process vpnd cannot name (slirp4netns, pasta: none names this namespace on its command line) "
                + "and leaves as that process's own connections, through the tunnel when that process is in the profile",
        ], "\(lines)")
    }

    /// A profile whose proxy has no resolvers: an error with the fix near the top (members'
    /// names do not resolve), and the proxy's line points at it. Resolvers that came from
    /// the tunnel say from where.
    @Test func noResolversIsAnErrorWithTheFix() {
        var report = Self.report()
        report.profiles[0].dns?.servers = []
        report.profiles[0].dns?.serversFrom = "none"
        let lines = StatusText.render(report, now: Self.now).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[0] == "error: profile work has no DNS resolvers, so its members' names do not resolve (their queries are refused): "
                + "set dns = [...] in [profile.work] or give the tunnel's wg-quick file a DNS = line")
        #expect(lines.contains("  dns       proxy: no resolvers: members' queries are refused (see the error above); answered 12, forwarded 10, failed 0, dropped 0"))

        var found = Self.report()
        found.profiles[0].dns?.serversFrom = "resolvconf"
        found.profiles[0].dns?.serversFile = "/run/resolvconf/interface/tun.wg0"
        let text = StatusText.render(found, now: Self.now)
        #expect(text.contains("  dns       proxy: resolvers 10.64.0.1 (from resolvconf /run/resolvconf/interface/tun.wg0); answered 12"), "\(text)")
        #expect(!text.contains("error:"))
        found.profiles[0].dns?.serversFrom = "wg-quick"
        found.profiles[0].dns?.serversFile = "/etc/vpnexec/work.conf"
        #expect(StatusText.render(found, now: Self.now).contains("  dns       proxy: resolvers 10.64.0.1 (from the tunnel's wg-quick file /etc/vpnexec/work.conf); answered 12"))
        found.profiles[0].dns?.serversFrom = "systemd-resolved-dbus"
        found.profiles[0].dns?.serversFile = nil
        found.profiles[0].dns?.serversLink = 5
        #expect(StatusText.render(found, now: Self.now).contains("  dns       proxy: resolvers 10.64.0.1 (from systemd-resolved over D-Bus, link 5); answered 12"))
    }

    /// Members' lookups through resolved and nscd: what vpnd answered, or that they leave
    /// where the kernel cannot follow them (with what to do).
    @Test func namesSayWhereLookupsThroughResolvedGo() {
        var report = Self.report()
        #expect(!StatusText.render(report, now: Self.now).contains("  names "))
        var names = NamesStatus(socket: "/run/vpnexec/resolve/work")
        (names.calls, names.errors, names.nscdRefused) = (3, 1, 1)
        report.profiles[0].dns?.names = names
        #expect(StatusText.render(report, now: Self.now).contains("  names     lookups through systemd-resolved answered here: 3 calls, 1 with an error; nscd refused 1 time\n"))
        report.profiles[0].dns?.names = NamesStatus(socket: nil, failure: "the kernel has no bpf_sock_addr_set_sun_path")
        #expect(StatusText.render(report, now: Self.now).contains("  names     lookups through systemd-resolved and nscd are NOT followed on this host "
            + "(the kernel has no bpf_sock_addr_set_sun_path): they leave outside the profile; take resolve off /etc/nsswitch.conf's hosts line (hosts: files dns) and stop nscd, or use Linux 6.7 or later\n"))
    }

    /// A tunnel that is not there holds members at connect(), before any packet: said, as the
    /// count cannot show it.
    @Test func aMissingTunnelSaysWhatMembersGet() {
        let text = StatusText.render(Self.report(state: "missing"), now: Self.now)
        #expect(text.contains("  tunnel    wg0: missing, rx 2.0 KiB, tx 1.0 KiB\n"))
        #expect(text.contains("  held      the tunnel is missing: members' connections fail (\"No route to host\") and their datagrams are refused; nothing leaves\n"), "\(text)")
        #expect(!StatusText.render(Self.report(), now: Self.now).contains("  held "))
    }

    @Test func countsTakeTheirNumber() {
        #expect(Plural.count(0, "packet") == "0 packets")
        #expect(Plural.count(1, "packet") == "1 packet")
        #expect(Plural.count(UInt64(2), "process", "processes") == "2 processes")
        #expect(Plural.count(1, "process", "processes") == "1 process")
        #expect(StatusText.render(Self.report(members: 1), now: Self.now).contains("  members   1 process\n"))
        #expect(StatusText.render(Self.report(members: 0), now: Self.now).contains("  members   0 processes\n"))
        #expect(StatusText.traffic(Traffic(packets: 1, bytes: 1536)) == "1 packet, 1.5 KiB")
    }

    /// No "(s)" or "(es)" in any line, with every counter at 1 and at 2.
    @Test func noParenthesizedPlurals() {
        for count in [1, 2] {
            var report = Self.report(members: count)
            let n = UInt64(count)
            report.profiles[0].exceptions.routeExecutables = ["/usr/bin/curl"]
            report.profiles[0].exceptions.execMoves = count
            var dns = report.profiles[0].dns ?? DNSStatus(servers: [])
            dns.encryptedDNS = DNSStatus.encryptedRefused
            (dns.encryptedDNSRefused, dns.canaryAnswered, dns.sharedAddresses) = (n, n, n)
            report.profiles[0].dns = dns
            report.profiles[0].tunnel.wireguard = WireGuardReport(publicKey: "k", listenPort: 51820, peers: [], drops: [:])
            report.profiles[0].tunnel.wireguard?.reconnect = ReconnectReport(
                schedule: ReconnectScheduleStatus(kind: ReconnectScheduleStatus.wireguard, minSeconds: 5, maxSeconds: 5, stormLimitPerMinute: 12, giveUpSeconds: 90),
                peers: [ReconnectPeerReport(publicKey: "p", attempts: n, lastError: nil, nextTry: 5)])
            (report.bypassMoves, report.bypassRefused, report.bypassed) = (count, count, Traffic(packets: n, bytes: 60 * n))
            report.heldNamespaces = [HeldNamespaceReport(cookie: 7, packets: n)]
            report.birthMarks += [BirthMarkReport(cgroup: "vpn.slice/vpn-bypass.slice", profile: nil, state: BirthMarkReport.marked, mark: "0x7f000000")]
            for verbose in [false, true] {
                let text = StatusText.render(report, verbose: verbose, now: Self.now)
                #expect(!text.contains("(s)") && !text.contains("(es)"), "\(text)")
                #expect(text.contains(count == 1 ? "1 process moved in" : "2 processes moved in"), "\(text)")
                #expect(text.contains(count == 1 ? "refused 1 time;" : "refused 2 times;"), "\(text)")
                #expect(text.contains(count == 1 ? "1 launch of bypass.executables" : "2 launches of bypass.executables"), "\(text)")
                #expect(text.contains(count == 1 ? "shared    1 address answered" : "shared    2 addresses answered"), "\(text)")
                #expect(text.contains(count == 1 ? "1 attempt since" : "2 attempts since"), "\(text)")
            }
        }
    }
}
