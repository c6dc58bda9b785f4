import Policy
import Testing

/// `tunnel.wireguard` as a list of servers and `tunnel.servers`.
@Suite struct ServerListPolicyTests {
    @Test func severalFilesFailoverByDefault() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.work]
            tunnel.wireguard = ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"]
            [profile.fast]
            tunnel = { wireguard = ["/etc/vpnexec/c.conf", "/etc/vpnexec/d.conf"], servers = "fastest" }
            [profile.one]
            tunnel.wireguard = "/etc/vpnexec/e.conf"
            """)])
        let work = try #require(policy.profile(named: "work"))
        #expect(work.servers == ServerList(files: ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"], mode: .failover,
                                           location: SourceLocation(file: "/p/a.toml", line: 2, column: 20)))
        guard case let .wireguard(config, interface, _) = work.tunnel else { Issue.record("not built-in"); return }
        #expect(config == "/etc/vpnexec/a.conf" && interface == "vx-work", "the first file is the tunnel's")
        #expect(policy.profile(named: "fast")?.servers?.mode == .fastest)
        #expect(policy.profile(named: "one")?.servers == nil)
    }

    @Test func badListsAreErrorsAtTheirLine() {
        #expect(diagnostics([("/p/a.toml", "[profile.w]\ntunnel.wireguard = [\"/a.conf\", \"b.conf\"]\n")])
                == ["/p/a.toml:2:32: error: [profile.w] tunnel.wireguard \"b.conf\" must be an absolute path to a wg-quick style file"])
        #expect(diagnostics([("/p/a.toml", "[profile.w]\ntunnel.wireguard = [\"/a.conf\", \"/a.conf\"]\n")])
                == ["/p/a.toml:2:32: error: [profile.w] tunnel.wireguard lists \"/a.conf\" twice"])
        #expect(diagnostics([("/p/a.toml", "[profile.w]\ntunnel.wireguard = []\n")])
                == ["/p/a.toml:2:20: error: [profile.w] tunnel.wireguard is an empty list: name at least one wg-quick file"])
        #expect(diagnostics([("/p/a.toml", "[profile.w]\ntunnel.wireguard = [\"/a.conf\", \"/b.conf\"]\ntunnel.servers = \"nearest\"\n")])
                == ["/p/a.toml:3:18: error: [profile.w] tunnel.servers \"nearest\" must be \"failover\" (in order) or \"fastest\" (shortest handshake round trip)"])
        let interface = diagnostics([("/p/a.toml", "[profile.w]\ntunnel.interface = \"wg0\"\ntunnel.servers = \"fastest\"\n")])
        #expect(interface.count == 1 && interface[0].hasPrefix("/p/a.toml:3:18: error: [profile.w] tunnel.servers needs several servers"), "\(interface)")
    }

    /// One file with `servers`: its [Peer]'s Endpoints are the servers (TunnelFiles checks
    /// there are several, at the key's place).
    @Test func oneFileWithServersIsAListOfOne() throws {
        let policy = try parse([("/p/a.toml", "[profile.w]\ntunnel.wireguard = \"/a.conf\"\ntunnel.servers = \"fastest\"\n[profile.x]\ntunnel = { wireguard = \"/b.conf\", failover_after = 2 }\n")])
        #expect(policy.profile(named: "w")?.servers == ServerList(files: ["/a.conf"], mode: .fastest, location: SourceLocation(file: "/p/a.toml", line: 3, column: 18)))
        #expect(policy.profile(named: "x")?.servers == ServerList(files: ["/b.conf"], mode: .failover, location: SourceLocation(file: "/p/a.toml", line: 5, column: 52), failoverAfter: 2))
        guard case let .wireguard(config, _, at)? = policy.profile(named: "w")?.tunnel else { Issue.record("not built-in"); return }
        #expect(config == "/a.conf" && at != policy.profile(named: "w")?.servers?.location)
    }

    @Test func failoverAfterCountsUnansweredInitiations() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.work]
            tunnel = { wireguard = ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"], failover_after = 5 }
            [profile.plain]
            tunnel.wireguard = ["/etc/vpnexec/c.conf", "/etc/vpnexec/d.conf"]
            """)])
        #expect(policy.profile(named: "work")?.servers?.failoverAfter == 5)
        #expect(policy.profile(named: "plain")?.servers?.failoverAfter == 3, "the default, as the man page says")
        #expect(diagnostics([("/p/a.toml", "[profile.w]\ntunnel.wireguard = [\"/a.conf\", \"/b.conf\"]\ntunnel.failover_after = 0\n")])
                == ["/p/a.toml:3:25: error: [profile.w] tunnel.failover_after 0 must be between 1 and 10: unanswered handshake initiations before the next server"])
        #expect(diagnostics([("/p/a.toml", "[profile.w]\ntunnel.wireguard = [\"/a.conf\", \"/b.conf\"]\ntunnel.failover_after = 11\n")]).count == 1)
        let single = diagnostics([("/p/a.toml", "[profile.w]\ntunnel.interface = \"wg0\"\ntunnel.failover_after = 2\n")])
        #expect(single.count == 1 && single[0].hasPrefix("/p/a.toml:3:25: error: [profile.w] tunnel.failover_after needs several servers"), "\(single)")
    }
}
