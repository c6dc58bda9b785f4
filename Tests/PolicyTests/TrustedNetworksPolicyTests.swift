import Policy
import Testing

/// `trusted = [...]`: both TOML spellings read the same rules, in order; every mistake is
/// refused with its file:line.
@Suite struct TrustedNetworksPolicyTests {
    @Test func inlineRulesAndArrayOfTablesReadTheSame() throws {
        let inline = try parse([("/p/10-work.toml", """
            [profile.work]
            tunnel.interface = "wg0"
            trusted = [
              { gateway_mac = "02:00:5E:00:53:0A", interface = "eth0", action = "disconnect" },
              { search_domain = "Corp.Example.", action = "block" },
              { interface = "wl*", ssid = "Home", action = "connect" },
            ]
            """)])
        let tables = try parse([("/p/10-work.toml", """
            [profile.work]
            tunnel.interface = "wg0"

            [[profile.work.trusted]]
            gateway_mac = "02-00-5e-00-53-0a"
            interface = "eth0"
            action = "disconnect"

            [[profile.work.trusted]]
            search_domain = "corp.example"
            action = "block"

            [[profile.work.trusted]]
            interface = "wl*"
            ssid = "Home"
            action = "connect"
            """)])
        let expected = [
            TrustedMatch(interface: "eth0", gatewayMAC: "02:00:5e:00:53:0a"),
            TrustedMatch(searchDomain: "corp.example"),
            TrustedMatch(interface: "wl*", ssid: "Home"),
        ]
        for policy in [inline, tables] {
            let rules = try #require(policy.profile(named: "work")).trusted
            #expect(rules.map(\.match) == expected)
            #expect(rules.map(\.action) == [.disconnect, .block, .connect])
        }
        #expect(inline.profiles[0].trusted.map(\.location.line) == [4, 5, 6])
        #expect(tables.profiles[0].trusted.map(\.location.line) == [4, 9, 13])
        #expect(try parse([("/p/a.toml", "[profile.work]\ntunnel.interface = \"wg0\"\n")]).profiles[0].trusted.isEmpty)
    }

    @Test func mistakesAreRefusedWithTheirPlace() {
        let errors = diagnostics([("/p/10-work.toml", """
            [profile.work]
            tunnel.interface = "wg0"
            trusted = [
              { gateway_mac = "02:00:5e:00:53", action = "disconnect" },
              { action = "block" },
              { interface = "eth0", action = "ignore" },
              { interface = "eth0" },
              { interface = "eth0", action = "block", bssid = "x" },
              { ssid = "", action = "block" },
              "eth0",
            ]
            """)])
        #expect(errors.contains("/p/10-work.toml:4:19: error: [profile.work] trusted rule 1 gateway_mac \"02:00:5e:00:53\" must be a link-layer address of six bytes, as in \"02:00:5e:00:53:01\""), "\(errors)")
        #expect(errors.contains("/p/10-work.toml:5:3: error: [profile.work] trusted rule 2 matches nothing; give at least one of interface, gateway_mac, search_domain, ssid"), "\(errors)")
        #expect(errors.contains("/p/10-work.toml:6:34: error: [profile.work] trusted rule 3 action \"ignore\" is not one of connect, disconnect, block"), "\(errors)")
        #expect(errors.contains("/p/10-work.toml:7:3: error: [profile.work] trusted rule 4 has no action; add action = \"connect\", \"disconnect\" or \"block\""), "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/10-work.toml:8:43: error: unknown key \"bssid\" in [profile.work] trusted rule 5") }, "\(errors)")
        #expect(errors.contains("/p/10-work.toml:9:12: error: [profile.work] trusted rule 6 ssid \"\" must be 1 to 32 bytes (a Wi-Fi network name)"), "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/p/10-work.toml:10:3: error: [profile.work] trusted: rule 7 must be a table") }, "\(errors)")
        #expect(errors.count == 7, "\(errors)")
        let notArray = diagnostics([("/p/a.toml", "[profile.work]\ntunnel.interface = \"wg0\"\ntrusted = { interface = \"eth0\", action = \"block\" }\n")])
        #expect(notArray.count == 1 && notArray[0].hasPrefix("/p/a.toml:3:11: error: [profile.work] trusted must be an array of rules"), "\(notArray)")
    }
}
