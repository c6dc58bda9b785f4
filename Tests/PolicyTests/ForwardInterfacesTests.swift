import Policy
import Testing

/// `forward.interfaces`: what arrives on these interfaces (a VM's bridge or tap) is the
/// profile's. A name the kernel could not give an interface, loopback, a profile's tunnel or
/// an interface another profile lists is refused at its place in the file.
@Suite struct ForwardInterfacesTests {
    @Test func readsTheInterfaces() throws {
        let policy = try parse([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            forward.interfaces = ["virbr1", "br-lab", "virbr1"]
            """)])
        #expect(policy.profiles[0].forwardInterfaces == ["br-lab", "virbr1"])
    }

    @Test func refusesWhatCannotBeOneOrIsTaken() {
        let errors = diagnostics([("/p/a.toml", """
            [profile.a]
            tunnel.interface = "wg0"
            forward.interfaces = ["a-name-much-too-long", "has space", "lo", "wg1", 3]
            [profile.b]
            tunnel.interface = "wg1"
            forward.interfaces = ["virbr1"]
            [profile.c]
            tunnel.interface = "wg2"
            forward.interfaces = ["virbr1"]
            """)])
        #expect(errors == [
            "/p/a.toml:3:23: error: [profile.a] forward interfaces: \"a-name-much-too-long\" cannot be an interface name (1 to 15 characters, no '/', ':' or spaces)",
            "/p/a.toml:3:47: error: [profile.a] forward interfaces: \"has space\" cannot be an interface name (1 to 15 characters, no '/', ':' or spaces)",
            "/p/a.toml:3:60: error: [profile.a] forward interfaces: \"lo\" is loopback: what arrives there is this host's own",
            "/p/a.toml:3:73: error: [profile.a] forward interfaces: items must be interface names as strings (\"virbr1\"), not integer",
            "/p/a.toml:3:66: error: profile \"a\": forward.interfaces wg1 is the tunnel of profile \"b\"; list the interfaces whose traffic goes into the tunnel (a VM's bridge or tap)",
            "/p/a.toml:9:23: error: profile \"c\": forward.interfaces virbr1 is profile \"b\"'s too (/p/a.toml:6:23); what arrives on an interface goes into one tunnel",
        ], "\(errors)")
    }
}
