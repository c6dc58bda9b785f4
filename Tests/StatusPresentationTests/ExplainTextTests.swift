import Control
@testable import StatusPresentation
import Testing

/// `vpnctl explain` for people: the first line says where the traffic and the names go and
/// whether the killswitch holds it; what decided it follows.
@Suite struct ExplainTextTests {
    static func member(state: String = "up", routed: Bool = true) -> Explanation {
        var dns = ExplainedDNS(port53: ExplainedDNS.proxy)
        dns.servers = ["10.64.0.1"]
        dns.namesSocket = "/run/vpnexec/names/work.varlink"
        var explanation = Explanation(pid: 4242, cgroup: "vpn.slice/vpn-work.slice", placement: Explanation.profileCgroup,
                                      rule: "profile work's cgroup (vpnexec -p work, ...)", dns: dns)
        explanation.command = "curl https://example.com/"
        explanation.profile = "work"
        explanation.mark = "0x1000000"
        explanation.markFrom = "vpn.slice/vpn-work.slice"
        var v4 = ExplainedRoute(family: "ipv4", destination: "192.0.2.1", interface: routed ? "wg0" : nil, source: routed ? "10.99.1.2" : nil, gateway: nil)
        v4.throughTunnel = routed
        var v6 = ExplainedRoute(family: "ipv6", destination: "2001:db8::1", interface: routed ? "wg0" : nil, source: routed ? "fd99::2" : nil, gateway: nil)
        v6.throughTunnel = routed
        explanation.routes = [v4, v6]
        explanation.tunnel = TunnelStatus(interface: "wg0", state: state)
        explanation.killswitch = ExplainedKillswitch(enabled: true, tunnelState: state, holding: state != "up")
        explanation.exceptions = ExplainedExceptions()
        return explanation
    }

    @Test func aMembersFirstLineSaysTunnelSourceDNSAndKillswitch() {
        let first = ExplainText.render(Self.member()).split(separator: "\n").first.map(String.init)
        #expect(first == "pid 4242 (curl https://example.com/) is in profile work; IPv4 goes through tunnel wg0 from 10.99.1.2; "
            + "IPv6 goes through tunnel wg0 from fd99::2; DNS via the profile's proxy to 10.64.0.1; killswitch on")
    }

    @Test func aHeldMemberSaysTheKillswitchHoldsIt() {
        let text = ExplainText.render(Self.member(state: "missing", routed: false))
        #expect(text.hasPrefix("pid 4242 (curl https://example.com/) is in profile work; IPv4 has no route; IPv6 has no route; DNS via the profile's proxy to 10.64.0.1; killswitch HOLDING it (tunnel missing)\n"))
        #expect(text.contains("  killswitch: on, HOLDING its traffic: tunnel wg0 missing\n"))
    }

    @Test func aNonMemberGoesDirectWithTheHostsResolver() {
        var explanation = Explanation(pid: 7, cgroup: "user.slice", placement: Explanation.outside, rule: "no profile", dns: ExplainedDNS(port53: ExplainedDNS.host))
        explanation.routes = [ExplainedRoute(family: "ipv4", destination: "192.0.2.1", interface: "eth0", source: "192.168.1.5", gateway: "192.168.1.1")]
        let text = ExplainText.render(explanation)
        #expect(text.hasPrefix("pid 7 is in no profile; IPv4 goes direct via eth0 from 192.168.1.5\n"))
        #expect(text.contains("  IPv4: direct via eth0 from 192.168.1.5, gateway 192.168.1.1 (route to 192.0.2.1)\n"))
        #expect(text.contains("  DNS: the host's resolver (not vpnd's)\n"))
        #expect(text.contains("sockets' mark: none (routed as the host's)\n"))
    }

    @Test func aProbeSaysWhetherItGotTheTunnelsAddress() {
        var explanation = Self.member()
        explanation.pid = nil
        var probe = ExplainedProbe(target: "198.51.100.7:80")
        (probe.localAddress, probe.connected, probe.tunnelAddress) = ("10.99.1.2", true, true)
        explanation.probe = probe
        let text = ExplainText.render(explanation)
        #expect(text.hasPrefix("a process launched with vpnexec -p work is in profile work;"))
        #expect(text.contains("probe: a process in the profile connected to 198.51.100.7:80 from 10.99.1.2: the tunnel's address (wg0)\n"))
    }

    /// A process in a relayed namespace (a rootless container): who reads its tap, and that
    /// the relay's sockets are what goes out; a relay in no profile says so on the first line.
    @Test func aRelayedNamespaceSaysWhoRelaysIt() {
        var explanation = Self.member()
        var namespace = ExplainedNamespace(state: ExplainedNamespace.relayed)
        (namespace.namespaceID, namespace.interfaces) = (6, ["tap0"])
        namespace.relay = RelayProcessReport(pid: 4300, program: "slirp4netns", profile: "work", cgroup: "vpn.slice/vpn-work.slice")
        explanation.namespace = namespace
        var text = ExplainText.render(explanation)
        #expect(text.contains("\nnetwork namespace: a container's, relayed: pid 4300 (slirp4netns) reads its tap0, in profile work: its sockets are that profile's member's, "
                              + "through its tunnel and held by its killswitch (id 6); the routes above are vpnd's namespace's, which the relay's sockets take\n"), "\(text)")
        #expect(!text.split(separator: "\n")[0].contains("relay"), "\(text)")
        explanation.namespace?.relay?.profile = nil
        text = ExplainText.render(explanation)
        #expect(text.split(separator: "\n")[0].hasSuffix("; but its namespace's relay, pid 4300 (slirp4netns), is in NO profile: its traffic leaves as that one's; killswitch on"), "\(text)")
        #expect(text.contains("in NO profile: what it relays leaves as that process's own connections, outside every tunnel (id 6); the routes above are this profile's in vpnd's namespace, not the relay's\n"), "\(text)")
        explanation.namespace?.relay = nil
        #expect(ExplainText.render(explanation).contains("relayed: what it sends to its tap0 is read by a process vpnd cannot name"))
    }
}
