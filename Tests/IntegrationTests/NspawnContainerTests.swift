import Foundation
import NetTestSupport
import Testing

/// A real container runtime: systemd-nspawn with `--network-veth`, started in a profile
/// (`vpnexec -p work -- systemd-nspawn ...`, so that the container's processes are in the
/// profile's cgroup; without a host systemd, `--keep-unit` keeps them below nspawn's own
/// cgroup rather than in a `--slice`). The host masquerades for it out of the uplink, as a
/// runtime's network setup does. Its datagrams reach the service from the tunnel's
/// addresses, v4 and v6, none in the clear, with the tunnel down none at all; started again
/// with the same name (a new namespace, the same `ve-` interface), it is routed again.
/// IPv6 proves the namespace's own kernel sockets pass its cgroup's egress: nspawn made the
/// namespace inside the profile's cgroup, so its neighbour discovery socket is the
/// profile's, unmarked (IPv6 failed with EPERM before, while IPv4's ARP, socketless, passed).
@Suite(.serialized) struct NspawnContainerTests {
    @Test func anNspawnContainerInAProfileGoesThroughItsTunnel() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let root = try SystemdRoot.path()
        let machine = "vx\(s.net.tag)n"
        let host = String("ve-\(machine)".prefix(15))
        try s.net.client.run(["sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"])
        try NftCLI.apply("""
            table inet vxtestnat {
                chain out { type nat hook postrouting priority srcnat; oifname "\(s.net.clientUplink)" masquerade; }
            }
            """, in: s.net.client)
        // What nspawn leaves in the profile's cgroup (registered first: removed after the
        // containers stop).
        let status = try s.daemon.status()
        let profileCgroup = try #require(status.cgroupRoot.flatMap { root in status.profiles.first.map { root + "/" + $0.cgroup } })
        cleanup.add("remove systemd-nspawn's cgroups in the profile") {
            for child in ["payload", "supervisor"] {
                _ = try? Command.status(["find", profileCgroup + "/" + child, "-depth", "-type", "d", "-exec", "rmdir", "{}", ";"])
            }
        }
        let watch = try s.captureCleartext()
        // The container configures its side and sends a datagram to each family's service
        // every 50 ms (bash's /dev/udp: the root has no python).
        let script = """
            ip addr add 10.96.0.2/24 dev host0; ip addr add fd96::2/64 dev host0 nodad; ip link set host0 up
            ip route add default via 10.96.0.1; ip -6 route add default via fd96::1
            while :; do echo x > /dev/udp/\(Topology.service4)/8080; echo x > /dev/udp/\(Topology.service6)/8080; sleep 0.05; done
            """
        func start() throws -> BackgroundProcess {
            let nspawn = try BackgroundProcess(try s.daemon.vpnexec(profile: "work", [
                "systemd-nspawn", "--register=no", "--keep-unit", "-q", "-D", root, "--volatile=overlay", "-M", machine,
                "--network-veth", "/bin/bash", "-c", script,
            ]), cleanup: cleanup, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY": "1"])
            try eventually("nspawn's veth \(host)") {
                guard nspawn.isRunning else { throw TestEnvironmentError("systemd-nspawn exited: \(nspawn.output.suffix(2000))") }
                return try s.net.client.run(["ip", "-br", "link"]).contains(host)
            }
            try s.net.client.run(["ip", "addr", "add", "10.96.0.1/24", "dev", host])
            try s.net.client.run(["ip", "addr", "add", "fd96::1/64", "dev", host, "nodad"])
            try s.net.client.run(["ip", "link", "set", host, "up"])
            return nspawn
        }
        func throughTheTunnel(_ what: String) throws {
            let (v4, v6) = (s.services.count("udp \(s.tunnel.clientAddress4)"), s.services.count("udp \(s.tunnel.clientAddress6)"))
            try eventually("the container's datagrams through the tunnel, v4 and v6 (\(what))") {
                s.services.count("udp \(s.tunnel.clientAddress4)") > v4 + 10 && s.services.count("udp \(s.tunnel.clientAddress6)") > v6 + 10
            }
        }

        var nspawn = try start()
        do { try throughTheTunnel("first start") } catch {
            let status = try s.daemon.status()
            let (v4, v6) = (s.services.count("udp \(s.tunnel.clientAddress4)"), s.services.count("udp \(s.tunnel.clientAddress6)"))
            Issue.record("\(error): routed \(status.routedNamespaces), held \(status.heldNamespaces); v4 \(v4), v6 \(v6); \(String(nspawn.output.suffix(1500)))")
            throw error
        }
        let routed = try #require(try s.daemon.status().routedNamespaces.first)
        #expect(routed.profile == "work" && routed.interfaces == [host], "\(routed)")
        // Started again under the same name: a new namespace behind the same interface name.
        nspawn.stop()
        try eventually("the first container's veth to go") { !(try s.net.client.run(["ip", "-br", "link"]).contains(host)) }
        nspawn = try start()
        try throughTheTunnel("started again")
        #expect(try s.daemon.status().routedNamespaces.map(\.cookie) != [routed.cookie], "a new namespace")
        // With the tunnel down, nothing of it leaves.
        try s.tunnel.setClientLink(up: false)
        Thread.sleep(forTimeInterval: 2)
        nspawn.stop()
        let (leaked, control) = try watch.stop()
        #expect(leaked.isEmpty, "the container's datagrams in the clear: \(leaked.prefix(5))")
        #expect(control > 0, "the capture sees the non-member's datagrams")
    }
}
