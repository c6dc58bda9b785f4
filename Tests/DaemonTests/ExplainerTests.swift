import Control
@testable import Daemon
import Policy
import TrustedFiles
import Testing

/// `vpnctl explain`'s account of a cgroup, from the policy and a status: which rule put it
/// there, the mark its sockets are born with (the nearest cgroup with socket programs),
/// who answers its names, the killswitch. The routes are the kernel's (ExplainTests).
@Suite struct ExplainerTests {
    static let policyText = """
        [profile.work]
        tunnel.interface = "wg0"
        dns = ["10.64.0.1"]
        apps = ["org.mozilla.firefox"]
        allow_lan = true
        bypass.domains = ["bank.example", "*.tax.example"]
        """
    static let firefox = "user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.mozilla.firefox-4242.scope"

    static func policy(_ extra: String = "") throws -> Policy {
        try Policy.parse([PolicySource(path: "/etc/vpnexec/policy.d/10-work.toml", text: policyText + extra)], resolver: SystemNameResolver())
    }

    static func status(state: String = "up", names: NamesStatus? = NamesStatus(socket: "/run/vpnexec/names/work.varlink")) -> StatusReport {
        var tunnel = TunnelStatus(interface: "wg0", state: state)
        tunnel.addresses = ["10.99.1.2/32"]
        var dns = DNSStatus(servers: ["10.64.0.1"])
        dns.serversFrom = "dns"
        dns.bypassDomainCount = 2
        dns.names = names
        var profile = ProfileStatus(name: "work", mark: 0x0100_0000, table: 7301, killswitch: true, cgroup: "vpn.slice/vpn-work.slice", tunnel: tunnel)
        profile.exceptions.allowLAN = true
        profile.joinedCgroups = [firefox]
        profile.dns = dns
        var report = StatusReport(version: "1", daemonPID: 1, policyDirectory: nil, cgroupRoot: nil, profiles: [profile])
        report.birthMarks = [BirthMarkReport(cgroup: "vpn.slice/vpn-work.slice", profile: "work", state: BirthMarkReport.marked, mark: "0x1000000"),
                             BirthMarkReport(cgroup: firefox, profile: "work", state: BirthMarkReport.marked, mark: "0x1000000"),
                             BirthMarkReport(cgroup: "vpn.slice/vpn-bypass.slice", profile: nil, state: BirthMarkReport.marked, mark: "0x4000000")]
        return report
    }

    static func explain(_ cgroup: String, policy: Policy? = nil, status: StatusReport = status()) throws -> Explanation {
        Explainer.explain(cgroup: cgroup, pid: 42, policy: try policy ?? Self.policy(), cgroupParent: "vpn.slice", status: status)
    }

    @Test func aMemberOfTheProfileCgroupHasItsMarkProxyAndKillswitch() throws {
        let explanation = try Self.explain("vpn.slice/vpn-work.slice")
        #expect(explanation.placement == Explanation.profileCgroup)
        #expect(explanation.profile == "work")
        #expect(explanation.rule.contains("/etc/vpnexec/policy.d/10-work.toml:1"))
        #expect(explanation.mark == "0x1000000")
        #expect(explanation.markFrom == "vpn.slice/vpn-work.slice")
        #expect(explanation.dns.port53 == ExplainedDNS.proxy)
        #expect(explanation.dns.servers == ["10.64.0.1"])
        #expect(explanation.dns.namesSocket == "/run/vpnexec/names/work.varlink")
        #expect(explanation.killswitch == ExplainedKillswitch(enabled: true, tunnelState: "up", holding: false))
        #expect(explanation.exceptions?.allowLAN == true)
        #expect(explanation.exceptions?.bypassDomains == 2)
        #expect(explanation.tunnel?.interface == "wg0")
    }

    /// A process's own child cgroup (a systemd scope vpnd made for a launch) takes the mark
    /// of the profile cgroup above it.
    @Test func aChildCgroupTakesTheNearestMarkAbove() throws {
        let explanation = try Self.explain("vpn.slice/vpn-work.slice/run-r42.scope")
        #expect(explanation.placement == Explanation.profileCgroup)
        #expect(explanation.markFrom == "vpn.slice/vpn-work.slice")
    }

    @Test func aJoinedAppScopeNamesTheAppAndTheProfile() throws {
        let explanation = try Self.explain(Self.firefox)
        #expect(explanation.placement == Explanation.joined)
        #expect(explanation.profile == "work")
        #expect(explanation.rule.contains("app org.mozilla.firefox is in profile work's apps"))
        #expect(explanation.markFrom == Self.firefox)
    }

    @Test func theBypassSliceHasTheBypassMarkAndTheHostsResolver() throws {
        let explanation = try Self.explain("vpn.slice/vpn-bypass.slice")
        #expect(explanation.placement == Explanation.bypass)
        #expect(explanation.profile == nil)
        #expect(explanation.mark == "0x4000000")
        #expect(explanation.dns.port53 == ExplainedDNS.host)
        #expect(explanation.killswitch == nil)
    }

    @Test func aProcessNowhereOfOursIsInNoProfile() throws {
        let explanation = try Self.explain("user.slice/user-1000.slice/session-2.scope")
        #expect(explanation.placement == Explanation.outside)
        #expect(explanation.mark == nil)
        #expect(explanation.dns.port53 == ExplainedDNS.host)
        #expect(explanation.dns.namesNotFollowed?.contains("not a member") == true)
    }

    @Test func systemModeTakesEveryOtherProcess() throws {
        let explanation = try Self.explain("user.slice/user-1000.slice/session-2.scope", policy: try Self.policy("\n[system]\nprofile = \"work\"\n"))
        #expect(explanation.placement == Explanation.system)
        #expect(explanation.profile == "work")
        #expect(explanation.rule.contains("[system] profile"))
        #expect(explanation.dns.port53 == ExplainedDNS.proxy)
    }

    @Test func aTunnelDownIsHeldByTheKillswitch() throws {
        let explanation = try Self.explain("vpn.slice/vpn-work.slice", status: Self.status(state: "missing"))
        #expect(explanation.killswitch?.holding == true)
    }

    @Test func namesNotFollowedSayWhy() throws {
        let failure = "this kernel has no cgroup hooks for Unix sockets"
        let explanation = try Self.explain("vpn.slice/vpn-work.slice", status: Self.status(names: NamesStatus(socket: nil, failure: failure)))
        #expect(explanation.dns.namesSocket == nil)
        #expect(explanation.dns.namesNotFollowed == failure)
    }

    /// A container is known by the id vpnd's namespace gives its namespace, not by its
    /// cgroup (a plain member may share the profile's cgroup with a container's process).
    @Test func aContainerIsKnownByItsNamespaceID() throws {
        var status = Self.status()
        var routed = RoutedNamespaceReport(cookie: 9, profile: "work", interfaces: ["veth-c1"])
        (routed.cgroup, routed.namespaceID) = ("vpn.slice/vpn-work.slice", 3)
        var held = HeldNamespaceReport(cookie: 10, packets: 5, cgroup: "vpn.slice/vpn-work.slice", profile: "work", reason: "its interface mv0 (macvlan) does not lead to the host")
        held.namespaceID = 4
        var relayed = RelayedNamespaceReport(cookie: 11, profile: "work", interfaces: ["tap0"])
        (relayed.namespaceID, relayed.relay) = (6, RelayProcessReport(pid: 77, program: "slirp4netns", profile: "work", cgroup: "vpn.slice/vpn-work.slice"))
        (status.routedNamespaces, status.heldNamespaces, status.relayedNamespaces) = ([routed], [held], [relayed])
        let policy = try Self.policy()
        func namespace(_ id: Int32?) -> ExplainedNamespace? {
            Explainer.explain(cgroup: "vpn.slice/vpn-work.slice", pid: 42, namespaceID: id, policy: policy, cgroupParent: "vpn.slice", status: status).namespace
        }
        #expect(namespace(nil) == nil, "vpnd's own namespace")
        #expect(namespace(3)?.state == ExplainedNamespace.routed && namespace(3)?.interfaces == ["veth-c1"])
        #expect(namespace(4)?.state == ExplainedNamespace.held && namespace(4)?.reason?.contains("macvlan") == true)
        #expect(namespace(5)?.state == ExplainedNamespace.unknown && namespace(5)?.namespaceID == 5)
        #expect(namespace(6)?.state == ExplainedNamespace.relayed && namespace(6)?.interfaces == ["tap0"] && namespace(6)?.relay?.pid == 77,
                "\(String(describing: namespace(6)))")
    }
}

extension ExplainerTests {
    /// A proxy with no server to ask refuses every query: not "via the proxy".
    @Test func aProxyWithoutResolversRefuses() throws {
        var status = Self.status()
        status.profiles[0].dns?.servers = []
        status.profiles[0].dns?.serversFrom = "none"
        let explanation = try Self.explain("vpn.slice/vpn-work.slice", status: status)
        #expect(explanation.dns.port53 == ExplainedDNS.refused)
        #expect(explanation.dns.failure?.contains("no resolvers") == true)
    }
}

extension ExplainerTests {
    /// A process that runs a listed program is where that list sends it: the rule names the
    /// list and its file:line; a program of no list, or a list that leads elsewhere, says nothing.
    @Test func anExecutableListNamesItsEntry() throws {
        let policy = try Self.policy("\nroute.executables = [\"/usr/bin/curl\"]\nbypass.executables = [\"/usr/bin/ssh\"]\n")
        let routed = Explainer.executableRule("/usr/bin/curl", placement: Explanation.profileCgroup, profile: "work", policy: policy)
        #expect(routed?.hasPrefix("it runs /usr/bin/curl, in profile work's route.executables (/etc/vpnexec/policy.d/10-work.toml:7:") == true, "\(routed ?? "nil")")
        let bypassed = Explainer.executableRule("/usr/bin/ssh", placement: Explanation.bypass, profile: nil, policy: policy)
        #expect(bypassed?.contains("in profile work's bypass.executables (/etc/vpnexec/policy.d/10-work.toml:8:") == true, "\(bypassed ?? "nil")")
        #expect(Explainer.executableRule("/usr/bin/ssh", placement: Explanation.profileCgroup, profile: "work", policy: policy) == nil)
        #expect(Explainer.executableRule("/usr/bin/vim", placement: Explanation.profileCgroup, profile: "work", policy: policy) == nil)
    }
}
