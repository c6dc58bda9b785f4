import Policy
import Testing

/// `on_demand` and `idle`: built-in tunnels only, `idle` only with `on_demand`, durations
/// with a unit; every refusal names file:line:column.
@Suite struct OnDemandPolicyTests {
    @Test func readsOnDemandAndIdle() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.work]
            tunnel.wireguard = "/etc/vpnexec/work.conf"
            on_demand = true
            idle = "10m"
            [profile.home]
            tunnel.wireguard = "/etc/vpnexec/home.conf"
            on_demand = true
            [profile.always]
            tunnel.wireguard = "/etc/vpnexec/always.conf"
            """)])
        #expect(policy.profiles[0].onDemand?.idle == .seconds(600))
        #expect(policy.profiles[0].onDemand?.location.line == 3)
        #expect(policy.profiles[1].onDemand != nil && policy.profiles[1].onDemand?.idle == nil)
        #expect(policy.profiles[2].onDemand == nil)
    }

    @Test func refusesOnDemandForATunnelVpndDoesNotOwn() {
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.interface = \"wg0\"\non_demand = true\nidle = \"5m\"\n")]) == [
            "/p/a.toml:3:1: error: [profile.work] on_demand needs a built-in tunnel (tunnel.wireguard): vpnd does not own wg0, so it cannot bring it up or down; whoever runs it decides",
            "/p/a.toml:4:1: error: [profile.work] idle needs a built-in tunnel (tunnel.wireguard): vpnd does not own wg0, so it cannot bring it up or down; whoever runs it decides",
        ])
    }

    @Test func refusesIdleWithoutOnDemand() {
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.wireguard = \"/w.conf\"\nidle = \"5m\"\n")]) == [
            "/p/a.toml:3:1: error: [profile.work] idle needs on_demand = true (a tunnel that is always up has no idle time)",
        ])
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.wireguard = \"/w.conf\"\non_demand = false\nidle = \"5m\"\n")]).count == 1)
    }

    @Test func refusesBadDurations() {
        for bad in ["10", "10 m", "1.5m", "m", "", "-5s", "500ms", "10y", "1m30s", "400d"] {
            let errors = diagnostics([("/p/a.toml", "[profile.work]\ntunnel.wireguard = \"/w.conf\"\non_demand = true\nidle = \"\(bad)\"\n")])
            #expect(errors == ["/p/a.toml:4:8: error: [profile.work] idle \"\(bad)\" is not a duration of at least a second: a number and a unit, as in \"90s\", \"10m\" or \"1h\" (ms, s, m, h, d)"], "\(bad)")
        }
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.wireguard = \"/w.conf\"\non_demand = true\nidle = 600\n")])
                == ["/p/a.toml:4:8: error: [profile.work] idle must be a string, not integer"])
        #expect(diagnostics([("/p/a.toml", "[profile.work]\ntunnel.wireguard = \"/w.conf\"\non_demand = \"yes\"\n")])
                == ["/p/a.toml:3:13: error: [profile.work] on_demand must be true or false, not string"])
    }

    @Test func durationsReadAndPrint() {
        #expect(Duration(parsing: "1500ms")?.milliseconds == 1500)
        #expect(Duration(parsing: "90s")?.description == "90s")
        #expect(Duration(parsing: "120s")?.description == "2m")
        #expect(Duration(parsing: "1h")?.milliseconds == 3_600_000)
        #expect(Duration(parsing: "2d")?.description == "2d")
        #expect(Duration(parsing: "10") == nil && Duration(parsing: "s") == nil && Duration(parsing: "5S") == nil)
        #expect(Duration(parsing: "99999999999999h") == nil)
    }
}
