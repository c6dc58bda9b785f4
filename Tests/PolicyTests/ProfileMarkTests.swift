import Policy
import Testing

/// Every place that needs a profile's mark reads `profile.mark`: it is the mark the profile's
/// index gives under the policy's mark mask, as parsed and after the policy changes.
@Suite struct ProfileMarkTests {
    @Test func theMarkIsTheIndexUnderTheMaskAsParsed() throws {
        let policy = try parse([("/p/a.toml", """
            [routing]
            mark_mask = 0x00f00000
            [profile.a]
            tunnel.interface = "wg0"
            [profile.b]
            tunnel.interface = "wg1"
            mark = 0x00300000
            [profile.c]
            tunnel.interface = "wg2"
            """)])
        #expect(policy.profiles.map(\.index) == [1, 3, 2])
        #expect(policy.profiles.map(\.mark.value) == [0x0010_0000, 0x0030_0000, 0x0020_0000])
    }

    /// A mask changed after parsing (or a profile added or re-indexed) never leaves a
    /// profile with the mark of another mask.
    @Test func theMarkFollowsThePolicysRouting() throws {
        var policy = try parse([("/p/a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n")])
        #expect(policy.profiles.map(\.mark.value) == [0x0100_0000])
        policy.routing.markMask = 0x0000_ff00
        #expect(policy.profiles.map(\.mark.value) == [0x0000_0100])
        var added = policy.profiles[0]
        added.name = "b"
        added.index = 7
        policy.profiles.append(added)
        #expect(policy.profiles.map(\.mark.value) == [0x0000_0100, 0x0000_0700])
        policy.profiles[0].index = 2
        #expect(policy.profiles.map(\.mark.value) == [0x0000_0200, 0x0000_0700])
    }
}
