import Policy
import Testing

/// An executable or a name has one fate across the whole policy: routed into one profile,
/// or bypassed, never both and never two profiles; each conflict is named where it is written.
@Suite struct OneFateTests {
    @Test func executablesAndNamesAreRoutedOnceAndNeverAlsoBypassed() {
        let errors = diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            route.executables = ["/usr/bin/thunderbird"]
            route.domains = ["*.corp.example"]
            [profile.b]
            tunnel.interface = "wg1"
            route.executables = ["/usr/bin/thunderbird"]
            route.domains = ["*.corp.example"]
            bypass.executables = ["/usr/bin/thunderbird"]
            bypass.domains = ["*.corp.example"]
            """)])
        #expect(errors.sorted() == [
            "/p/a.toml:7:22: error: profile \"b\": route.executables /usr/bin/thunderbird is already routed into profile \"a\" (/p/a.toml:3:22); an executable joins one profile",
            "/p/a.toml:8:18: error: profile \"b\": route.domains *.corp.example is already routed into profile \"a\" (/p/a.toml:4:18); a name goes into one tunnel",
            "/p/a.toml:9:23: error: profile \"b\": bypass.executables /usr/bin/thunderbird is routed into profile \"b\" (/p/a.toml:7:22); an executable either bypasses or is routed",
            "/p/a.toml:10:19: error: profile \"b\": bypass.domains *.corp.example is routed into profile \"b\" (/p/a.toml:8:18); a name either bypasses or is routed",
        ].sorted(), "\(errors)")
    }
}
