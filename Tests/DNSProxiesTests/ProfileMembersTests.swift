@testable import DNSProxies
import Testing

/// Whom a profile's names server answers: a process in one of its member cgroups as the
/// last apply gave them (its own, those that joined it), or below one; no other.
@Suite struct ProfileMembersTests {
    static let members = ProfileMembers(cgroups: [
        "work": ["vpn.slice/vpn-work.slice", "user.slice/user-1000.slice/user@1000.service/app.slice/vpn-work.slice"],
        "home": ["vpn.slice/vpn-home.slice"],
    ])

    @Test func aProcessInOrBelowAMemberCgroupIsAdmitted() {
        #expect(Self.members.admits("vpn.slice/vpn-work.slice", to: "work"))
        #expect(Self.members.admits("vpn.slice/vpn-work.slice/placed", to: "work"))
        #expect(Self.members.admits("user.slice/user-1000.slice/user@1000.service/app.slice/vpn-work.slice/app-firefox.scope", to: "work"))
    }

    @Test func anotherProfilesOrANamesakePrefixOrAnUnknownProfileIsNot() {
        #expect(!Self.members.admits("vpn.slice/vpn-home.slice", to: "work"))
        #expect(!Self.members.admits("vpn.slice/vpn-work.slice2", to: "work"))
        #expect(!Self.members.admits("vpn.slice/vpn-work.slice", to: "gone"))
        #expect(!ProfileMembers().admits("vpn.slice/vpn-work.slice", to: "work"), "before the first apply: no one")
    }
}
