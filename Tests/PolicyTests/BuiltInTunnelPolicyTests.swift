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
        #expect(errors.count == 1 && errors[0].contains("profile \"b\" uses interface wg0, which profile \"a\" uses for its built-in tunnel"))
    }

    @Test func sharingAnExternalInterfaceIsStillAllowed() throws {
        let policy = try parse([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n[profile.b]\ntunnel.interface = \"wg0\"\n")])
        #expect(policy.profiles.count == 2)
    }
}
