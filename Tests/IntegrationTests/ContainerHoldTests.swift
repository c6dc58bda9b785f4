import Foundation
import NetTestSupport
import Testing

/// A process of a profile in a network namespace of its own, joined to the host by a veth
/// the host forwards and masquerades for (what nspawn `--network-veth`, podman and docker
/// set up for a container in the profile's slice): its sockets carry the mark, which its
/// namespace's routing ignores and the veth clears, so the host forwarded what it sent out
/// of the physical link, tunnel up or down. Now what it sends outside its loopback is
/// dropped at its cgroup's egress and counted, and status names the namespace and the
/// process: tunnel up, tunnel down, vpnd killed, IPv4 and IPv6, not one packet in the clear,
/// while a non-member in the same namespace is seen (the control). Its own loopback works,
/// but for port 53 (which a host's resolver, docker's embedded one, would answer outside the
/// tunnel).
@Suite(.serialized) struct ContainerHoldTests {
    @Test func aMemberInANamespaceOfItsOwnIsHeld() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let tag = s.net.tag
        let container = try NetworkNamespace("vx\(tag)k", cleanup: cleanup)
        let host = "vx\(tag)kh", inside = "vx\(tag)kc"
        try Command.run(["ip", "link", "add", host, "netns", s.net.client.name, "type", "veth", "peer", "name", inside, "netns", container.name])
        for (namespace, interface, v4, v6) in [(s.net.client, host, "10.98.0.1/24", "fd98::1/64"), (container, inside, "10.98.0.2/24", "fd98::2/64")] {
            try namespace.run(["ip", "addr", "add", v4, "dev", interface])
            try namespace.run(["ip", "addr", "add", v6, "dev", interface, "nodad"])
            try namespace.run(["ip", "link", "set", interface, "up"])
        }
        try container.run(["ip", "route", "add", "default", "via", "10.98.0.1"])
        try container.run(["ip", "-6", "route", "add", "default", "via", "fd98::1"])
        try s.net.client.run(["sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"])
        try NftCLI.apply("""
            table inet vxtestnat {
                chain out { type nat hook postrouting priority srcnat; oifname "\(s.net.clientUplink)" masquerade; }
            }
            """, in: s.net.client)

        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "udp port 8080 or udp port 9002", cleanup: cleanup)
        // The control: a non-member in the same namespace, masqueraded out.
        let control = try BackgroundProcess(container.enter + ["python3", s.probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)
        var members: [BackgroundProcess] = []
        for target in [Topology.service4, Topology.service6] {
            members.append(try BackgroundProcess(try s.daemon.vpnexec(profile: "work", container.enter + ["python3", s.probe, "udp-loop", target, "8080"]), cleanup: cleanup))
        }
        try eventually("the hold to count the member's datagrams") {
            (try s.daemon.status().heldNamespaces.first?.packets ?? 0) > 20
        }
        let held = try #require(try s.daemon.status().heldNamespaces.first)
        #expect(held.profile == "work" && held.pid != nil && held.cgroup?.hasSuffix("vpn-work.slice") == true, "\(held)")
        #expect(try s.daemon.vpnctl(["status"]).stdout.contains("HELD: profile work, network namespace \(held.cookie)"))

        // Its own loopback: a member's TCP connection there works; a DNS query there does not.
        let listener = try BackgroundProcess(container.enter + ["socat", "TCP4-LISTEN:7000,bind=127.0.0.1,reuseaddr,fork", "EXEC:echo here"], cleanup: cleanup)
        try eventually("the listener in the namespace") { try container.run(["ss", "-ltnH"]).contains("127.0.0.1:7000") }
        let local = try Command.status(try s.daemon.vpnexec(profile: "work", container.enter + ["python3", "-c", "import socket; print(socket.create_connection(('127.0.0.1', 7000), 2).recv(100).decode().strip())"]))
        #expect(local.stdout.trimmed == "here", "loopback inside the namespace: \(local.stdout)\(local.stderr)")
        listener.stop()
        let dnsq = try PythonScript.write("dnsq.py", cleanup: cleanup)
        let dns = try Command.status(try s.daemon.vpnexec(profile: "work", container.enter + ["python3", dnsq, "udp", "127.0.0.11", "www.example"]))
        #expect(dns.status != 0, "a DNS query on its loopback is dropped: \(dns.stdout)\(dns.stderr)")

        try s.tunnel.setClientLink(up: false)
        let heldUp = try s.daemon.status().heldNamespaces.first?.packets ?? 0
        try eventually("more held with the tunnel down") { (try s.daemon.status().heldNamespaces.first?.packets ?? 0) > heldUp + 20 }
        s.daemon.process?.kill9()
        Thread.sleep(forTimeInterval: 1)
        for member in members { member.stop() }
        control.stop()
        #expect(try capture.packets("udp port 8080").isEmpty, "the member's datagrams in the clear")
        #expect(try capture.count("udp port 9002") > 20, "the capture sees the non-member's datagrams from the namespace")
        #expect(s.services.count("udp \(s.tunnel.clientAddress4)") == 0 && s.services.count("udp \(s.tunnel.clientAddress6)") == 0,
                "nor did they go through the tunnel: not routed there yet")
    }
}
