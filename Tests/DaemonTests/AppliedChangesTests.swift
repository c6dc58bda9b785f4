@testable import Daemon
import Plan
import Routing
import ServiceSupport
import Testing

/// What an apply changed is logged once, when it changes: held and released cgroups, units
/// that joined by name or were refused, IPv6 off and on again.
@Suite struct AppliedChangesTests {
    @Test func eachChangeIsSaidOnceWhenItHappens() {
        var first = RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)])
        first.unguardedCgroups = ["vpn.slice/vpn-work.slice": 101]
        first.joinedCgroups = ["user.slice/app-firefox.scope": .init(profile: "work", id: 300)]
        first.refusedCgroups = ["user.slice/app-x.scope": "profile home does not allow user 1000"]
        let lines = AppliedChanges.lines(first, before: nil)
        #expect(lines.map(\.level) == [.error, .info, .notice])
        #expect(lines[0].text.hasPrefix("vpn.slice/vpn-work.slice is held: the kernel does not have its socket programs"))
        #expect(lines[1].text == "user.slice/app-firefox.scope joined profile work (named for it)")
        #expect(lines[2].text.hasPrefix("refused: user.slice/app-x.scope is named to join a profile but profile home does not allow user 1000"))
        #expect(AppliedChanges.lines(first, before: first).isEmpty, "nothing changed: nothing said")

        var second = first
        second.unguardedCgroups = [:]
        second.loopbackIPv6 = false
        second.links["wg0"]?.ipv6 = false
        #expect(AppliedChanges.lines(second, before: first).map(\.text) == [
            "vpn.slice/vpn-work.slice is held no more: its socket programs are attached",
            "IPv6 is off on lo: members' IPv6 DNS queries are refused, not steered to their proxies",
            "IPv6 is off on wg0: no IPv6 route through it; its profiles' IPv6 is held as while it is down"])
        #expect(AppliedChanges.lines(second, before: second).isEmpty)
        #expect(AppliedChanges.lines(first, before: second).map(\.text) == [
            "vpn.slice/vpn-work.slice is held: the kernel does not have its socket programs, so its traffic is dropped (only loopback) and nothing is placed there until they are",
            "IPv6 is on again on lo: members' IPv6 DNS queries go to their proxies"])
    }
}
