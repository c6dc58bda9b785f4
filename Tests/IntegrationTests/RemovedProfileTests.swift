import Foundation
import NetTestSupport
import Testing

/// A reload that removes a profile leaves its running members held, not leaking: their
/// existing sockets (UDP and TCP, v4 and v6) send nothing anywhere, their new ones
/// are refused, and a profile added later with the removed one's mark does not take their
/// traffic into its tunnel. The profiles that stay keep their marks (and a restarted vpnd
/// keeps them too), so their members' sockets are not moved to another profile's mark.
@Suite(.serialized) struct RemovedProfileTests {
    /// Sends on held sockets every 10 ms: a datagram to each family's service, a line on a
    /// TCP connection to each; and tries a new TCP connection every 100 ms. Says what it can
    /// do.
    static let member = """
    import socket, sys, time
    host4, host6, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    u4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    held = []
    for host in (host4, host6):
        t = socket.create_connection((host, port), timeout=5)
        print("connected", t.recv(100).decode().strip(), flush=True)
        t.setblocking(False)
        held.append(t)
    n, said = 0, set()
    while True:
        for s, host in ((u4, host4), (u6, host6)):
            try: s.sendto(b"x", (host, port))
            except OSError: pass
        for t in held:
            try: t.send(b"line\\n")
            except OSError: pass
        n += 1
        if n % 10 == 0:
            try:
                socket.create_connection((host4, port + 1), timeout=0.05).close()
            except OSError as error:
                if error.strerror not in said:
                    said.add(error.strerror)
                    print("new socket:", error.strerror, flush=True)
        time.sleep(0.01)
    """

    @Test func aRemovedProfilesMembersAreHeld() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup) { interfaces in
            "[profile.work]\ntunnel.interface = \"\(interfaces[0])\"\n\n[profile.home]\ntunnel.interface = \"vxnone\"\n"
        }
        #expect(try s.daemon.status().profiles.map(\.mark) == [0x0100_0000, 0x0200_0000])
        let script = NSTemporaryDirectory() + "vx-\(uniqueTag())-member.py"
        try Self.member.write(toFile: script, atomically: true, encoding: .utf8)
        cleanup.add("remove \(script)") { try? FileManager.default.removeItem(atPath: script) }
        let member = try BackgroundProcess(try s.daemon.vpnexec(profile: "work", ["python3", script, Topology.service4, Topology.service6, "8080"]), cleanup: cleanup)
        let tunneled = "udp \(s.tunnel.clientAddress4)"
        try eventually("the member's traffic through the tunnel") {
            s.services.count(tunneled) > 5 && s.services.count("udp \(s.tunnel.clientAddress6)") > 5
                && member.output.contains("connected \(s.tunnel.clientAddress4)") && member.output.contains("connected \(s.tunnel.clientAddress6)")
        }
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 8080 or udp port 9002", cleanup: cleanup)
        let control = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)

        // work goes: its member stays in its cgroup, held.
        try s.daemon.writePolicy("[profile.home]\ntunnel.interface = \"vxnone\"\n")
        #expect(try s.daemon.vpnctl(["reload"]).status == 0)
        let status = try s.daemon.status()
        #expect(status.profiles.map(\.mark) == [0x0200_0000], "home keeps its mark: \(status.profiles.map(\.mark))")
        let left = s.daemon.cgroupParent + "/vpn-work.slice"
        #expect(status.heldCgroups.contains { $0.cgroup == left && $0.reason.contains("removed") }, "\(status.heldCgroups)")
        try eventually("the member's new sockets refused") { member.output.contains("new socket: Operation not permitted") }

        // A new profile with the removed one's mark (1 is free, and the lowest) and the same
        // tunnel: the held sockets' traffic does not become its.
        let before = s.services.count(tunneled)
        try s.daemon.writePolicy("[profile.home]\ntunnel.interface = \"vxnone\"\n\n[profile.other]\ntunnel.interface = \"\(s.tunnel.clientInterface)\"\n")
        #expect(try s.daemon.vpnctl(["reload"]).status == 0)
        #expect(try s.daemon.status().profiles.map(\.mark) == [0x0200_0000, 0x0100_0000], "home keeps 2; other takes 1")
        #expect(try s.member("other") == s.tunnel.clientAddress4, "the new profile works")
        let afterOther = s.services.count(tunneled)
        Thread.sleep(forTimeInterval: 1.5)
        #expect(s.services.count(tunneled) == afterOther, "the held member's datagrams do not enter the new profile's tunnel (\(before) before it)")

        // A restarted vpnd keeps the marks as the kernel has them, not in file order.
        s.daemon.process?.kill9()
        try s.daemon.start()
        #expect(try s.daemon.status().profiles.map(\.mark) == [0x0200_0000, 0x0100_0000])
        #expect(try s.daemon.status().heldCgroups.contains { $0.cgroup == left })

        control.stop()
        member.stop()
        #expect(try capture.packets("port 8080 and src host \(Topology.clientAddress4)").isEmpty, "the held member's traffic in the clear")
        #expect(try capture.packets("port 8080 and src host \(Topology.clientAddress6)").isEmpty)
        #expect(try capture.count("udp port 9002") > 0, "the capture sees the non-member's datagrams")
    }
}
