import Addresses
import Control
@testable import DNS
import DNSProxies
import DomainNames
import Monotonic
@testable import Names
import Testing

/// The DNS service's part of status: where members' queries arrive (routed to the steering
/// addresses, IPv4 alone when IPv6 is off on lo, or off and why) and a profile's names
/// (not followed on this host and why, else its names server's counts), an address answered
/// for a bypassed and a tunneled name with the seconds left. The real ones are proven in
/// namespaces (IPv6OffTests, ResolvedNamesTests, DNSTests).
@Suite struct DNSStatusTests {
    @Test func steeringToBothFamilies() {
        let status = DNSSteeringStatus(profiles: 3, ipv6: true)
        #expect(status == DNSSteeringStatus(state: DNSSteeringStatus.routed, addresses: ["127.77.0.0", "fd7f:4d::"], profiles: 3, ipv6Refused: false))
    }

    @Test func steeringIPv4AloneWhenIPv6IsOffOnLoopback() {
        let status = DNSSteeringStatus(profiles: 1, ipv6: false)
        #expect(status == DNSSteeringStatus(state: DNSSteeringStatus.routed, addresses: ["127.77.0.0"], profiles: 1, ipv6Refused: true))
    }

    @Test func noSteeringPointSaysWhy() {
        let status = DNSSteeringStatus(failure: "the kernel refused the steering program")
        #expect(status == DNSSteeringStatus(state: DNSSteeringStatus.off, addresses: [], profiles: 0, failure: "the kernel refused the steering program"))
        #expect(status.ipv6Refused == false)
    }

    @Test func namesNotFollowedSayWhyWhateverTheServerCounted() throws {
        var counters = NameServer.Counters()
        counters.calls = 4
        let names = try #require(NamesStatus(failure: "the kernel lacks cgroup connect programs for unix sockets (6.7)", socket: "/run/vpnexec/resolve/1", counters: counters))
        #expect(names == NamesStatus(socket: nil, failure: "the kernel lacks cgroup connect programs for unix sockets (6.7)"))
        #expect(NamesStatus(failure: "no programs", socket: nil, counters: nil)?.failure == "no programs", "failed before any server")
    }

    @Test func namesFollowedCountWhatTheServerAnswered() throws {
        let counters = NameServer.Counters(calls: 9, answered: 6, errors: 2, refused: 1)
        let names = try #require(NamesStatus(failure: nil, socket: "/run/vpnexec/resolve/1", counters: counters))
        var expected = NamesStatus(socket: "/run/vpnexec/resolve/1")
        (expected.calls, expected.answered, expected.errors, expected.refused) = (9, 6, 2, 1)
        #expect(names == expected)
        #expect(names.redirected == 0 && names.nscdRefused == 0, "the kernel's counts are StatusBuilder's, from the programs' storage")
    }

    @Test func noNamesServerNoNames() {
        #expect(NamesStatus(failure: nil, socket: nil, counters: nil) == nil)
        #expect(NamesStatus(failure: nil, socket: "/run/vpnexec/resolve/1", counters: nil) == nil)
    }

    @Test func aSharedAddressCountsItsSecondsUp() {
        let now = MonotonicInstant(nanoseconds: 9_000_000_000)
        var shared = DNSSharedAddress(address: IPAddress("198.51.100.7")!, bypassed: DomainName("video.example")!,
                                      tunneled: DomainName("intranet.example")!, until: now + .milliseconds(1200))
        #expect(SharedAddressReport(shared, now: now)
            == SharedAddressReport(address: "198.51.100.7", bypassed: "video.example", tunneled: "intranet.example", secondsLeft: 2))
        shared.until = now + .milliseconds(1)
        #expect(SharedAddressReport(shared, now: now).secondsLeft == 1, "a part of a second left shows as one")
        shared.until = now + .seconds(30)
        #expect(SharedAddressReport(shared, now: now).secondsLeft == 30)
    }
}
