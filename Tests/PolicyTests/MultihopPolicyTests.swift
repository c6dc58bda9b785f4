import Policy
import Testing

/// `tunnel.via`: an exit hop names its entry; the hops must lead somewhere, without a
/// cycle, from a built-in tunnel into a profile whose killswitch holds the transport.
@Suite struct MultihopPolicyTests {
    static let entry = """
        [profile.entry]
        tunnel.wireguard = "/etc/vpnexec/entry.conf"

        """

    @Test func anExitNamesItsEntry() throws {
        let policy = try parse([("/p/a.toml", Self.entry + """
            [profile.exit]
            tunnel.wireguard = "/etc/vpnexec/exit.conf"
            tunnel.via = "entry"
            """)])
        let exit = try #require(policy.profile(named: "exit"))
        #expect(exit.via == Via(entry: "entry", location: SourceLocation(file: "/p/a.toml", line: 5, column: 14)))
        #expect(policy.profile(named: "entry")?.via == nil)
    }

    @Test func anInterfaceTunnelMayBeTheEntry() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.entry]
            tunnel.interface = "wg0"
            [profile.exit]
            tunnel = { wireguard = "/etc/vpnexec/exit.conf", via = "entry" }
            """)])
        #expect(policy.profile(named: "exit")?.via?.entry == "entry")
    }

    @Test func anUnknownEntryIsAnError() {
        #expect(diagnostics([("/p/a.toml", Self.entry + """
            [profile.exit]
            tunnel.wireguard = "/etc/vpnexec/exit.conf"
            tunnel.via = "entyr"
            """)]) == ["/p/a.toml:5:14: error: profile \"exit\": tunnel.via \"entyr\" names no profile"])
    }

    @Test func aCycleIsAnErrorAtEachOfItsHops() {
        #expect(diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.wireguard = "/a.conf"
            tunnel.via = "a"
            """)]) == ["/p/a.toml:3:14: error: profile \"a\": tunnel.via makes a cycle (a -> a): the first hop must reach its server directly"])
        #expect(diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.wireguard = "/a.conf"
            tunnel.via = "b"
            [profile.b]
            tunnel.wireguard = "/b.conf"
            tunnel.via = "a"
            [profile.c]
            tunnel.wireguard = "/c.conf"
            tunnel.via = "a"
            """)]) == [
            "/p/a.toml:3:14: error: profile \"a\": tunnel.via makes a cycle (a -> b -> a): the first hop must reach its server directly",
            "/p/a.toml:6:14: error: profile \"b\": tunnel.via makes a cycle (b -> a -> b): the first hop must reach its server directly",
        ])
    }

    @Test func onlyABuiltInTunnelCanHaveAnEntry() {
        let errors = diagnostics([("/p/a.toml", Self.entry + """
            [profile.exit]
            tunnel.interface = "wg1"
            tunnel.via = "entry"
            """)])
        #expect(errors.count == 1 && errors[0].hasPrefix("/p/a.toml:5:14: error: profile \"exit\": tunnel.via needs the built-in tunnel (tunnel.wireguard)"), "\(errors)")
    }

    @Test func theEntryMustHoldTheTransportWhileItIsDown() {
        let errors = diagnostics([("/p/a.toml", """
            [profile.entry]
            tunnel.wireguard = "/etc/vpnexec/entry.conf"
            killswitch = false
            [profile.exit]
            tunnel.wireguard = "/etc/vpnexec/exit.conf"
            tunnel.via = "entry"
            """)])
        #expect(errors.count == 1 && errors[0].hasPrefix("/p/a.toml:6:14: error: profile \"exit\": tunnel.via \"entry\" needs killswitch = true in profile \"entry\""), "\(errors)")
    }

    @Test func viaMustBeAString() {
        let errors = diagnostics([("/p/a.toml", Self.entry + "[profile.exit]\ntunnel.wireguard = \"/x.conf\"\ntunnel.via = [\"entry\"]\n")])
        #expect(errors.count == 1 && errors[0].hasPrefix("/p/a.toml:5:"), "\(errors)")
    }
}
