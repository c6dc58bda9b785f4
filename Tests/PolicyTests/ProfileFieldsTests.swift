import Policy
import Testing

/// Every key a profile reads reaches the profile (ProfileDraft.fields): a row missing from
/// that table would leave its field at the default whatever the file says.
@Suite struct ProfileFieldsTests {
    @Test func everyKeyReachesTheProfile() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.entry]
            tunnel.interface = "wg0"
            [profile.exit]
            tunnel = { wireguard = ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"], via = "entry" }
            reconnect = { min = "5s", max = "2m" }
            on_demand = true
            idle = "10m"
            allow_lan = true
            allow_multicast = true
            route.executables = ["/usr/bin/b", "/usr/bin/a", "/usr/bin/a"]
            route.networks = ["10.2.0.0/16", "10.2.3.0/24", "10.1.0.0/24"]
            route.domains = ["z.example", "*.a.example", "Z.example"]
            forward.interfaces = ["virbr1", "br-lab", "virbr1"]
            bypass.executables = ["/usr/bin/c"]
            bypass.domains = ["bank.example"]
            dns = ["10.1.0.53"]
            allow_encrypted_dns = true
            apps = ["org.b", "org.a", "org.b"]
            trusted = [{ interface = "wl*", ssid = "Home", action = "connect" }]
            """)])
        let exit = try #require(policy.profile(named: "exit"))
        #expect(exit.allowLAN && exit.allowMulticast && exit.allowEncryptedDNS)
        #expect(exit.routeExecutables == ["/usr/bin/a", "/usr/bin/b"])
        #expect(exit.bypassExecutables == ["/usr/bin/c"])
        // Where each was first written: "/usr/bin/a" twice on line 10, the first at column 36.
        #expect(exit.executableLocations == [
            "/usr/bin/a": SourceLocation(file: "/p/a.toml", line: 10, column: 36),
            "/usr/bin/b": SourceLocation(file: "/p/a.toml", line: 10, column: 22),
            "/usr/bin/c": SourceLocation(file: "/p/a.toml", line: 14, column: 23),
        ])
        #expect(exit.routeNetworks.map(\.description) == ["10.1.0.0/24", "10.2.0.0/16"])
        #expect(exit.routeDomains.map(\.description) == ["*.a.example", "z.example"])
        #expect(exit.bypassDomains.map(\.description) == ["bank.example"])
        #expect(exit.forwardInterfaces == ["br-lab", "virbr1"])
        #expect(exit.dnsServers.map(\.description) == ["10.1.0.53"])
        #expect(exit.apps == ["org.a", "org.b"])
        #expect(exit.trusted.count == 1)
        #expect(exit.via?.entry == "entry")
        #expect(exit.servers?.files == ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"])
        #expect(exit.onDemand != nil && exit.reconnect != nil)
        let entry = try #require(policy.profile(named: "entry"))
        #expect(!entry.allowLAN && entry.routeExecutables.isEmpty && entry.apps.isEmpty && entry.via == nil && entry.onDemand == nil)
    }
}
