import Addresses
import DNS
@testable import DNSProxies
import Plan
import Policy
import Testing
import TrustedFiles

/// What each profile's resolver is built from: its servers, the lists its answers fill
/// (its own bypass list first, every profile's route list), the marks its steered queries
/// must carry.
@Suite struct ResolverSettingsTests {
    static func policy() throws -> Policy {
        try Policy.parse([PolicySource(path: "/p/10.toml", text: """
            [dns]
            min_ttl = 30
            max_ttl = 600
            [profile.work]
            tunnel.interface = "wg0"
            dns = ["10.0.0.1"]
            route.domains = ["*.corp.example"]
            [profile.home]
            tunnel.interface = "wg1"
            dns = ["10.1.0.1"]
            bypass.domains = ["*.bank.example"]
            """)], resolver: SystemNameResolver())
    }

    @Test func eachProfileFillsItsBypassListFirstAndEveryRouteList() throws {
        let all = ResolverSettings.all(try Self.policy(), resolvers: [:])
        let home = try #require(all["home"]), work = try #require(all["work"])
        #expect(home.configuration.domainSets.map(\.ipv4Set) == [ProfileObjectNames("home").bypassDomainSet(ipv4: true), ProfileObjectNames("work").routeDomainSet(ipv4: true)])
        #expect(home.configuration.tunneledSets?.ipv4Set == ProfileObjectNames("home").tunneledDomainSet(ipv4: true))
        #expect(work.configuration.domainSets.map(\.ipv4Set) == [ProfileObjectNames("work").routeDomainSet(ipv4: true)] && work.configuration.tunneledSets == nil)
        #expect(work.configuration.elementTimeout == 30...600)
    }

    @Test func theChosenResolversWinOverTheProfilesOwn() throws {
        let chosen = ["work": ProfileResolvers(servers: [IPAddress("10.64.0.9")!], source: .wireguardFile("/etc/vpnexec/exit.conf"))]
        let all = ResolverSettings.all(try Self.policy(), resolvers: chosen)
        #expect(all["work"]?.configuration.servers == [DNSServer(address: IPAddress("10.64.0.9")!)])
        #expect(all["home"]?.configuration.servers == [DNSServer(address: IPAddress("10.1.0.1")!)])
    }

    @Test func aSteeredQueryIsTakenWithItsProfilesMarkOnly() throws {
        let policy = try Self.policy()
        let all = ResolverSettings.all(policy, resolvers: [:])
        let work = try #require(policy.profile(named: "work")), home = try #require(policy.profile(named: "home"))
        let steered = try #require(all["work"]?.steered)
        #expect(steered.accepts(work.mark.value))
        #expect(!steered.accepts(home.mark.value) && !steered.accepts(nil) && !steered.accepts(0), "another profile's, none, unmarked")
        #expect(all["work"]?.mark == work.mark.value | policy.routing.proxyMark, "upstream: routed as the profile's, not back to a proxy")
    }
}
