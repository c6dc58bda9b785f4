import Policy
import Testing

struct FakeResolver: NameResolver {
    var users: [String: UInt32] = ["alice": 1001, "bob": 1002]
    var groups: [String: UInt32] = ["vpn-work": 2001, "staff": 50]
    func uid(ofUser name: String) -> UInt32? { users[name] }
    func gid(ofGroup name: String) -> UInt32? { groups[name] }
}

func parse(_ files: [(String, String)]) throws(PolicyError) -> Policy {
    try Policy.parse(files.map { PolicySource(path: $0.0, text: $0.1) }, resolver: FakeResolver())
}

/// The error a policy must be refused with; fails the test if it is accepted.
func diagnostics(_ files: [(String, String)]) -> [String] {
    do {
        let policy = try parse(files)
        Issue.record("policy was accepted: \(policy)")
        return []
    } catch {
        return error.diagnostics.map(\.description)
    }
}

@Suite struct PolicyParserTests {
    @Test func readsProfilesInDefinitionOrder() throws {
        let policy = try parse([
            ("/p/10-work.toml", """
            # work traffic
            [profile.work]
            tunnel.interface = "wg0"
            users = ["alice", 1005]
            groups = ["vpn-work"]
            killswitch = true

            [profile.home]
            tunnel = { interface = "tun0" }
            killswitch = false
            """),
            ("/p/20-lab.toml", """
            [profile.lab]
            tunnel.interface = "wg-lab"
            mark = 0x05000000
            table = 900
            """),
        ])
        #expect(policy.profiles.map(\.name) == ["work", "home", "lab"])
        let work = try #require(policy.profile(named: "work"))
        #expect(work.tunnel == .interface("wg0"))
        #expect(work.access.users == [Principal(name: "alice", id: 1001), Principal(name: nil, id: 1005)])
        #expect(work.access.groups == [Principal(name: "vpn-work", id: 2001)])
        #expect(work.access.location.description == "/p/10-work.toml:4:1")
        #expect(work.location.line == 2)
        #expect(work.killswitch)
        #expect(policy.profile(named: "home")?.killswitch == false)
        // Explicit marks are kept; the others take the lowest free index in order.
        #expect(policy.profiles.map(\.index) == [1, 2, 5])
        #expect(policy.profiles.map(\.table) == [7301, 7302, 900])
        #expect(policy.routing.mark(forIndex: 5) == 0x0500_0000)
    }

    @Test func explicitMarksAreSkippedByAutomaticOnes() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            [profile.b]
            tunnel.interface = "wg1"
            mark = 0x01000000
            """)])
        #expect(policy.profiles.map(\.index) == [2, 1])
    }

    @Test func accessRules() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.work]
            tunnel.interface = "wg0"
            users = ["alice"]
            groups = ["staff"]
            """)])
        let access = try #require(policy.profile(named: "work")).access
        #expect(access.allows(uid: 1001, groups: []))
        #expect(access.allows(uid: 1002, groups: [50]))
        #expect(!access.allows(uid: 1002, groups: [2001]))
        #expect(access.allows(uid: 0, groups: []))
        #expect(access.summary == "user alice (1001), group staff (50)")
    }

    @Test func routingSettings() throws {
        let policy = try parse([("/p/a.toml", """
            [routing]
            mark_mask = 0x00f00000
            table_base = 1000
            rule_priority = 100
            [profile.a]
            tunnel.interface = "wg0"
            """)])
        #expect(policy.routing.markMask == 0x00f0_0000)
        #expect(policy.routing.maximumIndex == 14)
        #expect(policy.profiles.first?.table == 1001)
        #expect(policy.routing.mark(forIndex: 1) == 0x0010_0000)
    }

    @Test func syntaxErrorNamesFileAndLine() {
        let errors = diagnostics([("/p/bad.toml", "[profile.work]\ntunnel.interface = \"wg0\nusers = []\n")])
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("/p/bad.toml:2:") == true)
        #expect(errors.first?.contains("invalid TOML") == true)
    }

    @Test func unknownKeyWithSuggestion() {
        let errors = diagnostics([("/p/a.toml", "[profile.work]\ntunnel.interface = \"wg0\"\nkilswitch = true\n")])
        #expect(errors == ["/p/a.toml:3:1: error: unknown key \"kilswitch\" in [profile.work]; did you mean \"killswitch\"?"])
    }

    /// Causes before effects (issue 43, item 8: "tunnel needs interface" came before
    /// "unknown key "interfce""). A key misspelt is the one error: what the table then lacks
    /// follows from it, and the did-you-mean says the fix. A key too far from any to guess
    /// comes first, and what is missing after it.
    @Test func aMisspeltKeyIsSaidAndNotWhatFollowsFromIt() {
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.interfce = \"wg0\"\n")]) == [
            "/p/a.toml:2:8: error: unknown key \"interfce\" in [profile.work] tunnel; did you mean \"interface\"?",
        ])
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunel.interface = \"wg0\"\n")]) == [
            "/p/a.toml:2:1: error: unknown key \"tunel\" in [profile.work]; did you mean \"tunnel\"?",
        ])
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.device = \"wg0\"\n")]) == [
            "/p/a.toml:2:8: error: unknown key \"device\" in [profile.work] tunnel (known keys: failover_after, interface, servers, via, wireguard)",
            "/p/a.toml:2:1: error: [profile.work] tunnel needs `interface` (an existing tunnel interface such as \"wg0\") or `wireguard` (a wg-quick style file for the built-in engine)",
        ])
        let rules = diagnostics([("/p/a.toml", """
            [profile.work]
            tunnel.interface = "wg0"
            trusted = [{ ssdi = "home", action = "connect" }, { ssid = "home", acton = "block" }]
            """)])
        #expect(rules == [
            "/p/a.toml:3:14: error: unknown key \"ssdi\" in [profile.work] trusted rule 1; did you mean \"ssid\"?",
            "/p/a.toml:3:68: error: unknown key \"acton\" in [profile.work] trusted rule 2; did you mean \"action\"?",
        ], "\(rules)")
    }

    @Test func wrongTypes() {
        let errors = diagnostics([("/p/a.toml", """
            [profile.work]
            tunnel.interface = 5
            killswitch = "yes"
            users = "alice"
            groups = [1.5]
            """)])
        #expect(errors == [
            "/p/a.toml:2:20: error: [profile.work] tunnel interface must be a string, not integer",
            "/p/a.toml:4:9: error: [profile.work] users must be an array of names and numbers, not string",
            "/p/a.toml:5:11: error: [profile.work] groups: items must be names (strings) or numbers, not float",
            "/p/a.toml:3:14: error: [profile.work] killswitch must be true or false, not string",
        ])
    }

    @Test func unknownUserAndGroup() {
        let errors = diagnostics([("/p/a.toml", """
            [profile.work]
            tunnel.interface = "wg0"
            users = ["alice", "mallory"]
            groups = ["nogroup-here"]
            """)])
        #expect(errors == [
            "/p/a.toml:3:19: error: unknown user \"mallory\" (not in the user database)",
            "/p/a.toml:4:11: error: unknown group \"nogroup-here\" (not in the group database)",
        ])
    }

    @Test func duplicateProfileAcrossFiles() {
        let errors = diagnostics([
            ("/p/10.toml", "[profile.work]\ntunnel.interface = \"wg0\"\n"),
            ("/p/20.toml", "\n\n[profile.work]\ntunnel.interface = \"wg1\"\n"),
        ])
        #expect(errors == ["/p/20.toml:3:1: error: profile \"work\" is defined twice (first at /p/10.toml:1:1)"])
    }

    @Test func twoProfilesOnOneMarkOrTable() {
        let errors = diagnostics([
            ("/p/10.toml", "[profile.a]\ntunnel.interface = \"wg0\"\nmark = 0x03000000\ntable = 500\n"),
            ("/p/20.toml", "[profile.b]\ntunnel.interface = \"wg1\"\nmark = 0x03000000\ntable = 500\n"),
        ])
        #expect(errors == [
            "/p/20.toml:3:8: error: profile \"b\" uses mark 0x3000000, already used by profile \"a\" (/p/10.toml:3:8)",
            "/p/20.toml:4:9: error: profile \"b\" uses routing table 500, already used by profile \"a\" (/p/10.toml:4:9)",
        ])
    }

    @Test func markOutsideTheMaskOrReserved() {
        let errors = diagnostics([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\nmark = 0x7f000000\n[profile.b]\ntunnel.interface = \"wg0\"\nmark = 0x10\n")])
        #expect(errors.count == 2)
        #expect(errors.allSatisfy { $0.contains("must be a non-zero value under the mark mask 0x7f000000") })
    }

    @Test func moreProfilesThanTheMaskHasRoomFor() {
        let errors = diagnostics([("/p/a.toml", """
            [routing]
            mark_mask = 0x3
            [profile.a]
            tunnel.interface = "wg0"
            [profile.b]
            tunnel.interface = "wg1"
            [profile.c]
            tunnel.interface = "wg2"
            """)])
        #expect(errors == ["/p/a.toml:7:1: error: too many profiles: the mark mask 0x3 has room for 2"])
    }

    @Test func tableCollidingWithAnAutomaticOne() {
        let errors = diagnostics([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n[profile.b]\ntunnel.interface = \"wg1\"\ntable = 7301\n")])
        #expect(errors == ["/p/a.toml:1:1: error: profile \"a\" would use routing table 7301 (table_base + its index), which profile \"b\" sets explicitly; set `table` for one of them"])
    }

    /// The route lists' table (the profile's + 65536) may be no profile's table and none of
    /// the kernel's (here 4294902014 + 65536 wraps to 254, main).
    @Test func routeListTablesStayClear() {
        let errors = diagnostics([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\ntable = 500\n[profile.b]\ntunnel.interface = \"wg1\"\ntable = 66036\n"
                                   + "[profile.c]\ntunnel.interface = \"wg2\"\ntable = 4294902014\n")])
        #expect(errors == [
            "/p/a.toml:1:1: error: profile \"a\" uses routing table 500, and its route lists table 500 + 65536 = 66036, which is profile \"b\"'s table; choose another `table`",
            "/p/a.toml:7:1: error: profile \"c\" uses routing table 4294902014, and its route lists table 4294902014 + 65536 = 254, which is a table of the kernel's; choose another `table`",
        ])
    }

    /// So may the DNS table (the profile's + 131072; here it wraps to 255, local).
    @Test func dnsTablesStayClear() {
        let errors = diagnostics([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\ntable = 500\n[profile.b]\ntunnel.interface = \"wg1\"\ntable = 131572\n"
                                   + "[profile.c]\ntunnel.interface = \"wg2\"\ntable = 4294836479\n")])
        #expect(errors == [
            "/p/a.toml:1:1: error: profile \"a\" uses routing table 500, and its DNS table 500 + 131072 = 131572, which is profile \"b\"'s table; choose another `table`",
            "/p/a.toml:7:1: error: profile \"c\" uses routing table 4294836479, and its DNS table 4294836479 + 131072 = 255, which is a table of the kernel's; choose another `table`",
        ])
    }

    @Test func reservedTablesAndBadNames() {
        let errors = diagnostics([("/p/a.toml", """
            [profile.Work-1]
            tunnel.interface = "wg0"
            [profile.b]
            tunnel.interface = "a/b"
            table = 254
            [profile.c]
            users = []
            """)])
        #expect(errors == [
            "/p/a.toml:1:10: error: profile name \"Work-1\" must start with a lower-case letter and contain only a-z, 0-9 and _ (at most 32; no dash: systemd reads dashes in slice names as nesting)",
            "/p/a.toml:4:20: error: [profile.b] tunnel.interface \"a/b\" is not a valid interface name (1 to 15 characters, no '/', ':' or white space)",
            "/p/a.toml:5:9: error: [profile.b] table 254 must be a routing table id from 1 to 4294967295 other than 253, 254 and 255 (default, main, local)",
            "/p/a.toml:6:1: error: [profile.c] has no tunnel; add e.g. tunnel.interface = \"wg0\"",
        ])
    }

    @Test func systemModeAndWhoMayBypass() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            """), ("/p/b.toml", """
            [system]
            profile = "a"
            bypass.users = ["alice"]
            bypass.groups = ["staff"]
            """)])
        #expect(policy.systemProfile?.name == "a")
        #expect(policy.system.bypass?.users.map(\.id) == [1001] && policy.system.bypass?.groups.map(\.id) == [50])
        #expect(policy.system.bypass?.location.description == "/p/b.toml:3:8")
        #expect(try parse([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n")]).systemProfile == nil, "off unless asked for")

        let errors = diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            [system]
            profile = "work"
            bypass.users = ["mallory"]
            lockdown = true
            """), ("/p/b.toml", "[system]\nprofile = \"a\"\n")])
        #expect(errors.count == 4, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:4:11: error: [system] profile \"work\" is not defined; profiles: a") }, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:5:17: error: unknown user \"mallory\"") }, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:6:1: error: unknown key \"lockdown\" in [system] (known keys: bypass, profile)") }, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/b.toml:1:") && $0.contains("[system] is set again (first at /p/a.toml:") }, "\(errors)")
    }

    @Test func appsByID() throws {
        let policy = try parse([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\napps = [\"org.mozilla.firefox\", \"firefox\", \"firefox\"]\n")])
        #expect(policy.profile(named: "a")?.apps == ["firefox", "org.mozilla.firefox"])
        let errors = diagnostics([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\napps = [\"bad/app\", 3]\n")])
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:3:9: error: [profile.a] apps: \"bad/app\" is not an application id") }, "\(errors)")
    }

    @Test func dnsAndDomains() throws {
        let policy = try parse([("/p/a.toml", """
            [dns]
            min_ttl = 30
            max_ttl = 3600
            [profile.a]
            tunnel.interface = "wg0"
            dns = ["10.64.0.1", "fd00::53"]
            bypass.domains = ["Bank.Example.", "*.cdn.example"]
            route.domains = ["*.corp.example"]
            allow_encrypted_dns = true
            [profile.b]
            tunnel.interface = "wg1"
            """)])
        let a = try #require(policy.profile(named: "a"))
        #expect(a.allowEncryptedDNS && policy.profile(named: "b")?.allowEncryptedDNS == false, "refused unless allowed")
        #expect(a.dnsServers.map(\.description) == ["10.64.0.1", "fd00::53"])
        #expect(a.bypassDomains.map(\.description) == ["*.cdn.example", "bank.example"])
        #expect(a.routeDomains.map(\.description) == ["*.corp.example"])
        #expect(policy.dns.minTTL == 30 && policy.dns.maxTTL == 3600)

        let errors = diagnostics([("/p/a.toml", """
            [dns]
            min_ttl = 0
            port_base = 6000
            [profile.a]
            tunnel.interface = "wg0"
            dns = ["resolver.example"]
            bypass.domains = ["bank..example", "*.corp.example"]
            [profile.b]
            tunnel.interface = "wg1"
            route.domains = ["*.corp.example"]
            allow_encrypted_dns = "yes"
            """)])
        #expect(errors.count == 6, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:11:23: error: [profile.b] allow_encrypted_dns must be") }, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:2:11: error: [dns] min_ttl 0 must be 1 to 86400 seconds") })
        // The proxies' own ports are gone (any local user could hold them).
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:3:1: error: [dns] port_base: no longer a setting") }, "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:6:8: error: [profile.a] dns: items must be IP addresses") })
        #expect(errors.contains { $0.hasPrefix("/p/a.toml:7:19: error: [profile.a] bypass domains: ") })
        #expect(errors.contains { $0.contains("bypass.domains *.corp.example is routed into profile \"b\"") })
    }

    /// A name no DNS answer can carry is refused where it is written (`vpnctl check` said
    /// nothing about `-bad.example`), and nothing else of the policy is taken.
    @Test func invalidDomainLabelsAreRefusedWithTheirLine() throws {
        let errors = diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            route.domains = ["ok.example", "-bad.example"]
            bypass.domains = ["*.cdn-.example", "192.0.2.7"]
            """)])
        #expect(errors == [
            "/p/a.toml:3:32: error: [profile.a] route domains: domain \"-bad.example\" has the label \"-bad\", which starts or ends with \"-\"; a label starts and ends with a letter or digit",
            "/p/a.toml:4:19: error: [profile.a] bypass domains: domain \"*.cdn-.example\" has the label \"cdn-\", which starts or ends with \"-\"; a label starts and ends with a letter or digit",
            "/p/a.toml:4:37: error: [profile.a] bypass domains: domain \"192.0.2.7\" ends in an all-numeric label, as an IPv4 address does; a domain pattern is a name (addresses and networks go in route.networks)",
        ], "\(errors)")
    }

    @Test func lanAndRouteNetworks() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            allow_lan = true
            allow_multicast = true
            route.networks = ["10.20.0.0/16", "10.20.5.0/24", "fd00:20::/48", "192.0.2.7/32"]
            [profile.b]
            tunnel.interface = "wg1"
            """)])
        let a = try #require(policy.profile(named: "a"))
        #expect(a.allowLAN && a.allowMulticast)
        #expect(a.routeNetworks.map(\.description) == ["10.20.0.0/16", "192.0.2.7/32", "fd00:20::/48"], "covered networks folded, sorted")
        #expect(policy.profile(named: "b")?.allowLAN == false && policy.profile(named: "b")?.routeNetworks.isEmpty == true)

        let errors = diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            allow_multicast = true
            route.networks = ["10.20.0.1/16", "192.0.2.9", "banana/8", 7]
            [profile.b]
            tunnel.interface = "wg1"
            route.networks = ["10.0.0.0/8"]
            [profile.c]
            tunnel.interface = "wg2"
            route.networks = ["10.9.0.0/16"]
            [profile.d]
            tunnel.interface = "wg3"
            route.networks = ["0.0.0.0/0", "::/0"]
            """)])
        #expect(errors == [
            "/p/a.toml:3:1: error: [profile.a] allow_multicast needs allow_lan = true (multicast is part of reaching the LAN)",
            "/p/a.toml:4:19: error: [profile.a] route networks: \"10.20.0.1/16\" has host bits set; did you mean \"10.20.0.0/16\"?",
            "/p/a.toml:4:48: error: [profile.a] route networks: \"banana/8\" is not a network (address/length, e.g. \"10.20.0.0/16\" or \"fd00:20::/48\")",
            "/p/a.toml:4:60: error: [profile.a] route networks: items must be networks as strings (\"10.20.0.0/16\"), not integer",
            "/p/a.toml:13:19: error: [profile.d] route networks: \"0.0.0.0/0\" is every address; to send the whole host through a profile use [system] profile = \"NAME\" (system mode)",
            "/p/a.toml:13:32: error: [profile.d] route networks: \"::/0\" is every address; to send the whole host through a profile use [system] profile = \"NAME\" (system mode)",
            "/p/a.toml:10:19: error: profile \"c\": route.networks 10.9.0.0/16 overlaps 10.0.0.0/8 of profile \"b\" (/p/a.toml:7:19); a network goes into one tunnel",
        ], "\(errors)")
    }

    @Test func routingErrorsAndDuplicates() {
        let errors = diagnostics([
            ("/p/1.toml", "[routing]\nmark_mask = 0x50000000\nrule_priority = 40000\ntable_base = 10\nfoo = 1\n"),
            ("/p/2.toml", "[routing]\n"),
        ])
        #expect(errors == [
            "/p/1.toml:2:13: error: [routing] mark_mask 1342177280 must be one run of at least 2 contiguous bits, e.g. 0x7f000000",
            "/p/1.toml:4:14: error: [routing] table_base 10 must be between 256 and 4294963198",
            "/p/1.toml:3:17: error: [routing] rule_priority 40000 must be between 5 and 32760 (vpnexec's rules take 0 to 3, and rule_priority - 1 to rule_priority + 5, before the main table's rule at 32766)",
            "/p/1.toml:5:1: error: unknown key \"foo\" in [routing] (known keys: mark_mask, rule_priority, table_base)",
            "/p/2.toml:1:1: error: [routing] is set again (first at /p/1.toml:1:1); set it in one file only",
        ])
    }

    @Test func emptyPolicyIsValid() throws {
        #expect(try parse([]).profiles.isEmpty)
        #expect(try parse([("/p/a.toml", "# nothing yet\n")]).profiles.isEmpty)
    }
}
