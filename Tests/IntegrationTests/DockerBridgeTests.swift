import Foundation
import NetTestSupport
import Testing

/// docker.io's containers are children of its daemon (containerd's shims, in /docker/ID),
/// never of the caller, so `vpnexec -p work -- docker run` does not make them members. A
/// network of their own whose bridge has a name (`docker network create -o
/// com.docker.network.bridge.name=NAME`) listed in the profile's `forward.interfaces` makes
/// them the profile's: the service sees the tunnel's address; tunnel down, nothing of them in
/// the clear, while a non-member's datagrams are (the control). Its names, asked of docker's
/// embedded resolver (127.0.0.11 in the container), are the profile's proxy's: dockerd asks
/// upstream from the container's namespace, across the bridge. dockerd (Debian's 20.10) runs
/// in the client namespace with its directories, socket and containerd namespace of the
/// test's own.
@Suite(.serialized) struct DockerBridgeTests {
    @Test func aDockerNetworksBridgeInForwardInterfacesIsTheProfiles() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: { interfaces in
            "[profile.work]\ntunnel.interface = \"\(interfaces[0])\"\ndns = [\"10.99.1.1\"]\nforward.interfaces = [\"vx\(interfaces[0].dropFirst(2).dropLast(2))dk\"]\n"
        })
        let (tag, bridge) = (s.net.tag, "vx\(s.net.tag)dk")
        let resolver = try TunnelResolver(s, cleanup: cleanup)
        let base = "/tmp/vx-\(tag)-docker"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        cleanup.add("remove \(base)") {
            // dockerd unmounts its layers when it stops; one killed leaves them mounted.
            let mounts = ((try? Command.run(["findmnt", "-rn", "-o", "TARGET"])) ?? "").split(separator: "\n").filter { $0.hasPrefix(base + "/") }
            for mount in mounts.reversed() { _ = try? Command.status(["umount", "-l", String(mount)]) }
            try? FileManager.default.removeItem(atPath: base)
        }
        try BusyboxImage.write(root: base + "/root", tar: base + "/image.tar")
        // What dockerd writes outside its directories (its plugin directory, its trust key),
        // removed unless it was there before.
        for path in ["/run/docker", "/etc/docker/key.json"] where !FileManager.default.fileExists(atPath: path) {
            cleanup.add("remove \(path)") { try? FileManager.default.removeItem(atPath: path) }
        }
        let dockerd = try BackgroundProcess(s.net.client.enter + [
            "dockerd", "--data-root", base + "/data", "--exec-root", base + "/exec", "--pidfile", base + "/dockerd.pid",
            "-H", "unix://\(base)/docker.sock", "--containerd-namespace", "vx\(tag)", "--containerd-plugins-namespace", "vx\(tag)p",
            // The upstream server of its embedded resolver named, not read from the host's
            // resolv.conf: the same forward from the container's namespace whatever the host
            // holds, but for a loopback server there (docs/limitations.md).
            "--bridge=none", "--ip6tables=false", "--dns", "192.0.2.53",
        ], cleanup: cleanup)
        // The Debian client by its path, with this daemon's socket.
        let docker = ["/usr/bin/docker", "-H", "unix://\(base)/docker.sock"]
        // After dockerd's own cleanup (registered later, run first): its containers go, so it
        // stops within its grace.
        cleanup.add("remove the containers") { _ = try? Command.status(docker + ["rm", "--force", "vx\(tag)"]) }
        try eventually("dockerd to answer", seconds: 30) {
            guard dockerd.isRunning else { throw TestEnvironmentError("dockerd exited: \(dockerd.output.suffix(2000))") }
            return (try? Command.status(docker + ["version"]))?.status == 0
        }
        try Command.run(docker + ["import", base + "/image.tar", "vxbusybox"])
        try Command.run(docker + ["network", "create", "-o", "com.docker.network.bridge.name=\(bridge)", "vx\(tag)"])
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 8080 or port 53 or udp port 9002", cleanup: cleanup)
        let control = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)
        let loop = "while :; do timeout 2 nc \(Topology.service4) 8080 </dev/null; sleep 0.2; done"
        try Command.run(docker + ["run", "--detach", "--name", "vx\(tag)", "--network", "vx\(tag)", "vxbusybox", "sh", "-c", loop])
        let cgroup = try Command.run(docker + ["exec", "vx\(tag)", "sh", "-c", "cat /proc/1/cgroup"])
        #expect(!cgroup.contains("vpn-work.slice"), "docker's container is no member: \(cgroup)")
        do {
            try eventually("the container's connections through the tunnel", seconds: 20) { s.services.count("tcp \(s.tunnel.clientAddress4)") > 2 }
        } catch {
            Issue.record("\(error): seen \(s.services.seen().suffix(4)); \(dockerd.output.suffix(1500))")
            throw error
        }
        #expect(!s.services.seen().contains { $0.hasPrefix("tcp") && $0 != "tcp \(s.tunnel.clientAddress4)" }, "\(s.services.seen())")
        // On a network of its own the container asks docker's embedded resolver, which
        // forwards what it does not know: the profile's proxy answers, through the tunnel.
        let resolvConf = try Command.run(docker + ["exec", "vx\(tag)", "sh", "-c", "cat /etc/resolv.conf"])
        #expect(resolvConf.contains("nameserver 127.0.0.11"), "the embedded resolver: \(resolvConf)")
        let lookup = try Command.status(docker + ["exec", "vx\(tag)", "nslookup", "www.corp.example"])
        #expect(lookup.stdout.contains("192.0.2.82"), "the container's lookup: \(lookup.stdout)\(lookup.stderr)")
        #expect(resolver.queries.contains { $0.contains("www.corp.example from \(s.tunnel.clientAddress4)") }, "through the tunnel: \(resolver.queries)")
        try s.tunnel.setClientLink(up: false)
        Thread.sleep(forTimeInterval: 2)
        control.stop()
        #expect(try capture.packets("port 8080").isEmpty, "the container's connections in the clear")
        #expect(try capture.packets("port 53").isEmpty, "the container's DNS in the clear")
        #expect(try capture.count("udp port 9002") > 20, "the capture sees the non-member's datagrams")
    }
}
