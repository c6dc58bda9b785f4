import Control
import Foundation
import Testing

/// docs/reference.md's "Explain JSON keys" against `vpnctl explain --json` for an
/// explanation with every field set: every key is documented, and nothing else is.
@Suite struct ExplainReferenceTests {
    static var full: Explanation {
        var dns = ExplainedDNS(port53: ExplainedDNS.proxy)
        (dns.servers, dns.serversFrom, dns.failure) = (["10.64.0.1"], "dns", "none")
        (dns.namesSocket, dns.namesNotFollowed) = ("/run/vpnexec/names/work", "none")
        var explanation = Explanation(pid: 42, cgroup: "vpn.slice/vpn-work.slice", placement: Explanation.profileCgroup, rule: "profile work's cgroup", dns: dns)
        (explanation.command, explanation.profile, explanation.mark, explanation.markFrom) = ("curl", "work", "0x1000000", "vpn.slice/vpn-work.slice")
        var route = ExplainedRoute(family: "ipv4", destination: "192.0.2.1", interface: "wg0", source: "10.99.1.2", gateway: "10.99.1.1")
        route.throughTunnel = true
        explanation.routes = [route]
        explanation.tunnel = TunnelStatus(interface: "wg0", state: "up")
        explanation.killswitch = ExplainedKillswitch(enabled: true, tunnelState: "up", holding: false)
        explanation.exceptions = ExplainedExceptions()
        var namespace = ExplainedNamespace(state: ExplainedNamespace.routed)
        (namespace.namespaceID, namespace.interfaces, namespace.reason) = (3, ["veth0"], "none")
        namespace.relay = RelayProcessReport(pid: 4300, program: "slirp4netns", profile: "work", cgroup: "vpn.slice/vpn-work.slice")
        explanation.namespace = namespace
        var probe = ExplainedProbe(target: "192.0.2.80:80")
        (probe.localAddress, probe.error) = ("10.99.1.2", "none")
        explanation.probe = probe
        return explanation
    }

    @Test func theFullExplanationHasEveryFieldSet() {
        // The tunnel is status's TunnelStatus, documented there.
        let unset = StatusReferenceTests.unset(Self.full, "").filter { !$0.hasPrefix(".tunnel.") }
        #expect(unset.isEmpty, "set these in ExplainReferenceTests.full: \(unset.sorted())")
    }

    @Test func theReferenceListsExactlyTheKeysOfTheJSON() throws {
        let documented = try StatusReferenceTests.table("Explain JSON keys").map(\.0)
        #expect(documented.count == Set(documented).count)
        let json = try JSONSerialization.jsonObject(with: Data(ControlCoding.encode(Self.full)))
        var emitted = Set<String>()
        StatusReferenceTests.keyPaths(json, "", maps: Set(documented.filter { $0.hasSuffix(".*") }), into: &emitted)
        #expect(emitted.subtracting(documented).isEmpty, "undocumented keys: \(emitted.subtracting(documented).sorted())")
        #expect(Set(documented).subtracting(emitted).isEmpty, "documented, never emitted: \(Set(documented).subtracting(emitted).sorted())")
    }
}
