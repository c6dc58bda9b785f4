import Control
@testable import StatusPresentation
import Testing

/// A profile's containers and forward.interfaces: a row each under the profile in `vpnctl
/// status`, between its members and its traffic; a row each in `vpnctl members`' second
/// table.
@Suite struct ContainerRowsTests {
    static func report() -> StatusReport {
        var report = StatusTextTests.report()
        report.profiles[0].forwardInterfaces = [
            ForwardInterfaceReport(interface: "virbr1", state: ForwardInterfaceReport.routed, received: Traffic(packets: 10, bytes: 2048),
                                   sent: Traffic(packets: 1, bytes: 60)),
            ForwardInterfaceReport(interface: "br-lab", state: ForwardInterfaceReport.missing),
        ]
        report.profiles[0].containerDNSDropped = Traffic(packets: 2, bytes: 120)
        var podman = RoutedNamespaceReport(cookie: 4099, profile: "work", interfaces: ["veth3"], bridges: ["podman0"])
        (podman.runtime, podman.name, podman.addresses) = ("podman", "4f1c2d3e5a6b", ["10.88.0.2/16", "fd88::2/64"])
        (podman.sent, podman.received, podman.heldPackets) = (Traffic(packets: 9, bytes: 900), Traffic(packets: 8, bytes: 1600), 0)
        var plain = RoutedNamespaceReport(cookie: 4100, profile: "work", interfaces: ["ve-box"])
        plain.heldPackets = 3
        report.routedNamespaces = [podman, plain]
        var held = HeldNamespaceReport(cookie: 4101, packets: 12, pid: 4242, cgroup: "vpn.slice/vpn-work.slice/machine-lab.scope", profile: "work",
                                       reason: "its interface mv0 (macvlan) does not lead to the host")
        (held.runtime, held.name, held.addresses) = ("machine", "lab", ["198.51.100.50/24"])
        report.heldNamespaces = [held]
        return report
    }

    @Test func statusHasARowPerContainerUnderItsProfile() {
        let text = StatusText.render(Self.report(), now: StatusTextTests.now)
        #expect(text.hasPrefix("HELD: profile work, machine lab, network namespace 4101 (pid 4242 in vpn.slice/vpn-work.slice/machine-lab.scope): 12 packets dropped;"), "\(text)")
        #expect(text.contains("""
              members   2 processes
              container podman 4f1c2d3e5a6b, network namespace 4099: routed from veth3 (on podman0); 10.88.0.2/16, fd88::2/64; sent 9 packets, 900 B, received 8 packets, 1.6 KiB
              container network namespace 4100: routed from ve-box; 3 packets held before it was routed
              forward   virbr1: routed; received 10 packets, 2.0 KiB, sent 1 packet, 60 B
              forward   br-lab: missing (what arrives on it once it is there is the profile's)
              their DNS to the profile's proxy, UDP and TCP; 2 packets, 120 B dropped
              sent      1 packet, 60 B
            """), "\(text)")
        #expect(!StatusText.render(StatusTextTests.report(), now: StatusTextTests.now).contains("container"), "no rows without containers")
    }

    @Test func membersHasARowPerContainerAndForwardInterface() {
        let report = Self.report()
        var relayed = RelayedNamespaceReport(cookie: 4102, profile: "work", interfaces: ["tap0"])
        (relayed.runtime, relayed.name, relayed.addresses) = ("podman", "9a8b7c6d5e4f", ["10.0.2.100/24"])
        relayed.relay = RelayProcessReport(pid: 4300, program: "slirp4netns", profile: "work")
        var stray = RelayedNamespaceReport(cookie: 4103, profile: "work", interfaces: ["tap0"])
        stray.relay = RelayProcessReport(pid: 4301, program: "pasta", match: RelayProcessReport.alone)
        let unnamed = RelayedNamespaceReport(cookie: 4104, profile: "work", interfaces: ["tap0", "tap1"])
        let rows = ContainerRows.rows(profiles: ["work"], routed: report.routedNamespaces, relayed: [relayed, stray, unnamed], held: report.heldNamespaces,
                                      forward: ["work": report.profiles[0].forwardInterfaces ?? []])
        #expect(rows == [
            ["4099", "work", "podman 4f1c2d3e5a6b", "routed", "veth3 on podman0", "10.88.0.2/16,fd88::2/64", "sent 900 B, received 1.6 KiB"],
            ["4100", "work", "-", "routed", "ve-box", "-", "sent 0 B, received 0 B"],
            ["4102", "work", "podman 9a8b7c6d5e4f", "relayed", "tap0", "10.0.2.100/24", "by pid 4300 (slirp4netns), in profile work"],
            ["4103", "work", "-", "relayed", "tap0", "-", "by pid 4301 (pasta, the only relay it can be), in NO profile: outside every tunnel"],
            ["4104", "work", "-", "relayed", "tap0,tap1", "-", "by a process vpnd cannot name"],
            ["4101", "work", "machine lab", "held", "-", "198.51.100.50/24", "12 packets dropped: its interface mv0 (macvlan) does not lead to the host"],
            ["-", "work", "forward.interfaces", "routed", "virbr1", "-", "received 2.0 KiB, sent 60 B"],
            ["-", "work", "forward.interfaces", "missing", "br-lab", "-", "-"],
        ])
        #expect(ContainerRows.rows(profiles: ["other"], routed: report.routedNamespaces, held: report.heldNamespaces, forward: [:]).isEmpty)
    }
}
