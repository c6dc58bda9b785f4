import Policy
import Testing

/// `tunnel.wireguard`: the built-in engine's file and the interface vpnd creates for it.
@Suite struct BuiltInTunnelPolicyTests {
    @Test func namesTheInterfaceAfterTheProfileUnlessGiven() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.work]
            tunnel.wireguard = "/etc/vpnexec/work.conf"
            [profile.streaming_abroad]
            tunnel = { wireguard = "/etc/vpnexec/s.conf", interface = "wgs" }
            """)])
        guard case let .wireguard(config, interface, location) = policy.profiles[0].tunnel else { Issue.record("not built-in"); return }
        #expect(config == "/etc/vpnexec/work.conf" && interface == "vx-work" && location.line == 2)
        #expect(policy.profiles[1].tunnel.interfaceName == "wgs")
        #expect(policy.profiles[0].tunnel.isBuiltIn && !Tunnel.interface("wg0").isBuiltIn)
        // Long profile names are cut to the kernel's 15 characters.
        let long = try parse([("/p/a.toml", "[profile.a_very_long_profile_name]\ntunnel.wireguard = \"/x.conf\"\n")])
        #expect(long.profiles[0].tunnel.interfaceName == "vx-a_very_long_")
    }

    @Test func refusesARelativePath() {
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.wireguard = \"work.conf\"\n")]) == [
            "/p/a.toml:2:20: error: [profile.work] tunnel.wireguard \"work.conf\" must be an absolute path to a wg-quick style file",
        ])
    }

    @Test func aBuiltInTunnelsInterfaceBelongsToOneProfile() {
        let errors = diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.wireguard = "/a.conf"
            tunnel.interface = "wg0"
            [profile.b]
            tunnel.interface = "wg0"
            """)])
        #expect(errors == ["/p/a.toml:4:1: error: profile \"b\" uses interface wg0, which profile \"a\" uses for its built-in tunnel; a built-in tunnel's interface belongs to one profile"])
        #expect(diagnostics([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n[profile.b]\ntunnel = { wireguard = \"/b.conf\", interface = \"wg0\" }\n")]) == [
            "/p/a.toml:3:1: error: profile \"b\" uses interface wg0, which profile \"a\" uses for its tunnel; a built-in tunnel's interface belongs to one profile",
        ])
    }

    @Test func sharingAnExternalInterfaceIsStillAllowed() throws {
        let policy = try parse([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n[profile.b]\ntunnel.interface = \"wg0\"\n")])
        #expect(policy.profiles.count == 2)
    }
}

/// `reconnect = { min, max }`: the built-in tunnel's handshake retry schedule.
@Suite struct ReconnectPolicyTests {
    @Test func readsTheScheduleOfABuiltInTunnel() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.work]
            tunnel.wireguard = "/etc/vpnexec/work.conf"
            reconnect = { min = "5s", max = "2m" }
            [profile.home]
            tunnel.wireguard = "/etc/vpnexec/home.conf"
            """)])
        let reconnect = try #require(policy.profiles[0].reconnect)
        #expect(reconnect.minimum.milliseconds == 5000 && reconnect.maximum.milliseconds == 120_000 && reconnect.location.line == 3)
        #expect(policy.profiles[1].reconnect == nil)
    }

    @Test(arguments: [
        ("reconnect = { min = \"1s\", max = \"60s\" }", "3:21: error: [profile.work] reconnect min 1s is below WireGuard's REKEY_TIMEOUT (5s)"),
        ("reconnect = { min = \"2m\", max = \"60s\" }", "3:33: error: [profile.work] reconnect min 2m is above max 1m"),
        ("reconnect = { min = \"5\", max = \"60s\" }", "3:21: error: [profile.work] reconnect min \"5\" is not a duration"),
        ("reconnect = { min = 5, max = \"60s\" }", "3:21: error: [profile.work] reconnect min must be a string"),
        ("reconnect = { max = \"60s\" }", "3:1: error: [profile.work] reconnect needs min"),
        ("reconnect = { min = \"5s\", max = \"60s\", tries = 3 }", "3:40: error: unknown key \"tries\" in [profile.work] reconnect (known keys: max, min)"),
        ("reconnect = \"5s\"", "3:13: error: [profile.work] reconnect must be a table"),
    ])
    func refusesABadSchedule(line: String, message: String) {
        let errors = diagnostics([("/p/a.toml", "[profile.work]\ntunnel.wireguard = \"/w.conf\"\n\(line)\n")])
        #expect(errors.count == 1 && errors.allSatisfy { $0.contains(message) }, "\(errors)")
    }

    @Test func refusesTheKeyOnATunnelVpndDoesNotRun() {
        let errors = diagnostics([("/p/a.toml", "[profile.work]\ntunnel.interface = \"wg0\"\nreconnect = { min = \"5s\", max = \"60s\" }\n")])
        #expect(errors.count == 1 && errors[0].hasPrefix("/p/a.toml:3:1: error: [profile.work] reconnect applies to built-in tunnels (tunnel.wireguard) only"), "\(errors)")
    }
}
