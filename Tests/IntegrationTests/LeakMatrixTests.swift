import Foundation
import NetTestSupport
import Testing

/// The leak matrix: every way out of a profile a member (or an unlucky admin) can try,
/// each proved by what arrives on the client's physical link (tcpdump with
/// --immediate-mode), each with a positive control seen by the same capture.
@Suite(.serialized) struct LeakMatrixTests {
    /// A member setting SO_MARK (our bypass mark, another value under our mask, a foreign
    /// mark, all bits), binding to the physical interface, or sending raw or datagram ICMP:
    /// with the tunnel down, not one packet leaves in the clear, v4 and v6; with the tunnel
    /// up, a member that set a mark no profile routes loses its packets at its cgroup's
    /// egress (counted), neither tunneled nor in the clear.
    @Test func membersLeaveOnlyThroughTheTunnelWhateverTheyTry() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let user = try TestUser("vxm\(uniqueTag())", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup) { "[profile.work]\ntunnel.interface = \"\($0[0])\"\nusers = [\"\(user.name)\"]\n" }
        let leak = try PythonScript.write("leak.py", cleanup: cleanup)
        try s.net.client.run(["sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"])
        let marks = ["0x7f000000", "0x05000000", "0x0000ca6c", "0xffffffff"]

        for mark in marks {
            let before = try s.daemon.status()
            try Command.run(try s.daemon.vpnexec(profile: "work", ["python3", leak, "udp-mark", mark, Topology.service4, "8080", "0.3"]))
            let after = try s.daemon.status()
            if mark == "0x05000000" {
                // Under our mask and no profile's: the killswitch drops it first (postrouting
                // runs before the cgroup's egress), as it would a removed profile's.
                #expect((after.droppedStaleMarks?.packets ?? 0) > (before.droppedStaleMarks?.packets ?? 0), "SO_MARK \(mark): dropped as a mark nobody holds, counted")
            } else {
                #expect(after.profiles[0].droppedByKillswitch.packets > before.profiles[0].droppedByKillswitch.packets, "SO_MARK \(mark): dropped at the member's egress, counted")
            }
        }
        #expect(s.services.seen().isEmpty, "neither tunneled nor in the clear: \(s.services.seen())")
        try Command.run(try s.daemon.vpnexec(profile: "work", ["python3", leak, "udp-mark", "0x01000000", Topology.service4, "8080", "0.3"]))
        #expect(s.services.count("udp \(s.tunnel.clientAddress4)") > 0, "a member that sets its own profile's mark is tunneled as before")

        try s.tunnel.setClientLink(up: false)
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "udp or icmp or icmp6", cleanup: cleanup)
        var attacks: [BackgroundProcess] = []
        for target in [Topology.service4, Topology.service6] {
            for mark in marks {
                attacks.append(try BackgroundProcess(try s.daemon.vpnexec(profile: "work", ["python3", leak, "udp-mark", mark, target, "9001"]), cleanup: cleanup))
            }
            attacks.append(try BackgroundProcess(try s.daemon.vpnexec(profile: "work", user: user.name,
                                                                        ["python3", leak, "udp-bind", s.net.clientUplink, target, "9001"]), cleanup: cleanup))
            attacks.append(try BackgroundProcess(try s.daemon.vpnexec(profile: "work", ["python3", leak, "icmp-raw", target]), cleanup: cleanup))
            attacks.append(try BackgroundProcess(try s.daemon.vpnexec(profile: "work", user: user.name, ["python3", leak, "icmp-dgram", target]), cleanup: cleanup))
            // A non-member that sets the profile's mark itself is the profile's: held too.
            attacks.append(try BackgroundProcess(s.net.client.enter + ["python3", leak, "udp-mark", "0x01000000", target, "9001"], cleanup: cleanup))
            // Positive controls: a non-member doing the same is seen by this capture.
            attacks.append(try BackgroundProcess(s.net.client.enter + ["python3", leak, "udp-mark", "0x7f000000", target, "9002"], cleanup: cleanup))
            attacks.append(try BackgroundProcess(s.net.client.enter + ["python3", leak, "icmp-raw", target == Topology.service4 ? Topology.serverUplink4 : Topology.serverUplink6], cleanup: cleanup))
        }
        for attack in attacks {
            #expect(attack.waitForExit(seconds: 15))
            #expect(attack.process.terminationStatus == 0, "the attack ran to its end: \(attack.output)")
        }
        let leaked = try capture.packets("udp dst port 9001 or (icmp and dst host \(Topology.service4)) or (icmp6 and dst host \(Topology.service6))")
        #expect(leaked.isEmpty, "member packets in the clear: \(leaked.prefix(5))")
        #expect(try capture.count("udp dst port 9002 and ip") > 20, "the capture sees a non-member's marked UDP (v4)")
        #expect(try capture.count("udp dst port 9002 and ip6") > 20, "the capture sees a non-member's marked UDP (v6)")
        #expect(try capture.count("icmp and dst host \(Topology.serverUplink4)") > 20)
        #expect(try capture.count("icmp6 and dst host \(Topology.serverUplink6)") > 20)
    }

    /// A profile cgroup removed and made again (new id), with its parent and without,
    /// while vpnd runs and while it is dead: a member in it never sends in the clear (its
    /// sockets are refused until vpnd has set the cgroup up: by the parent's programs, or
    /// the root's path guard where the parent itself was made again), and a new socket is
    /// tunneled once vpnd knows the new id.
    @Test func cgroupsMadeAgainAreBlockedUntilVpndKnowsThem() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let root = try TestCgroups.cgroupRoot()
        let parent = "\(root)/\(s.daemon.cgroupParent)"
        let slice = "\(parent)/vpn-work.slice"
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "udp", cleanup: cleanup)
        let control = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)
        defer { control.stop() }

        /// A member started by writing its pid into the slice (as systemd starts a unit),
        /// not through vpnexec: nothing asks vpnd first.
        func placedMember() throws -> BackgroundProcess {
            try BackgroundProcess(s.net.client.enter + ["sh", "-c", "echo $$ > \(slice)/cgroup.procs && exec python3 \(s.probe) udp-fresh \(Topology.service4) 8080"], cleanup: cleanup)
        }
        func remake(withParent: Bool) throws {
            _ = rmdir(slice)
            if withParent { _ = rmdir(parent); _ = mkdir(parent, 0o755) }
            _ = mkdir(slice, 0o755)
        }
        let tunneled = "udp \(s.tunnel.clientAddress4)"

        try s.tunnel.setClientLink(up: false)
        // vpnd running: the directory is made again under it (twice, the second time with
        // the parent, whose watch the first removal must not have lost).
        for withParent in [false, true] {
            try remake(withParent: withParent)
            let member = try placedMember()
            let viaVpnexec = try BackgroundProcess(try s.daemon.vpnexec(profile: "work", ["python3", s.probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
            Thread.sleep(forTimeInterval: 1.5)
            member.stop()
            viaVpnexec.stop()
        }
        // vpnd dead.
        s.daemon.process?.kill9()
        for withParent in [false, true] {
            try remake(withParent: withParent)
            let member = try placedMember()
            Thread.sleep(forTimeInterval: 1.5)
            // The last one keeps sending: it must be tunneled once vpnd is back.
            if !withParent { member.stop() }
        }
        // vpnd back, tunnel back: the member that kept trying is tunneled again.
        try s.daemon.start()
        let refused = try s.daemon.status().unknownCgroupRefusals ?? 0
        try s.tunnel.setClientLink(up: true)
        let seen = s.services.count(tunneled)
        let tunneledAgain = (try? eventually("the member in the re-made cgroup to be tunneled") { s.services.count(tunneled) > seen + 10 }) != nil
        #expect(tunneledAgain, "the member in the re-made cgroup is tunneled once vpnd is back")
        let leaked = try capture.packets("udp dst port 8080 and host \(Topology.service4)")
        #expect(leaked.isEmpty, "member packets in the clear: \(leaked.prefix(5))")
        #expect(try capture.count("udp dst port 9002") > 100, "the capture saw the non-member all along")
        #expect(refused > 0, "the kernel refused the sockets of the cgroups nobody knew, counted across vpnd's restart")
        #expect(!s.services.seen().contains("udp \(Topology.clientAddress4)"))
    }

    /// A member's listening socket: a connection attempt from the physical side gets no
    /// SYN-ACK (tunnel up or down); through the tunnel it is answered; a non-member's
    /// listener answers on the physical side (the control).
    @Test func memberListenersAnswerOnlyThroughTheTunnel() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let leak = try PythonScript.write("leak.py", cleanup: cleanup)
        let member = try InteractiveProcess(try s.daemon.vpnexec(profile: "work", ["python3", leak, "listen", "7000"]), cleanup: cleanup)
        #expect(try member.readLine() == "listening")
        let outsider = try InteractiveProcess(s.net.client.enter + ["python3", leak, "listen", "7001"], cleanup: cleanup)
        #expect(try outsider.readLine() == "listening")
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "tcp", cleanup: cleanup)
        func connect(from namespace: NetworkNamespace, to host: String, port: Int) throws -> Bool {
            let script = "import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2); print(s.recv(10).decode().strip())"
            return try namespace.status(["python3", "-c", script, host, String(port)]).stdout.contains("hello")
        }
        #expect(try connect(from: s.net.server, to: s.tunnel.clientAddress4, port: 7000), "member reached through the tunnel (v4)")
        #expect(try connect(from: s.net.server, to: s.tunnel.clientAddress6, port: 7000), "member reached through the tunnel (v6)")
        for up in [true, false] {
            try s.tunnel.setClientLink(up: up)
            for address in [Topology.clientAddress4, Topology.clientAddress6] {
                #expect(try !connect(from: s.net.wan, to: address, port: 7000), "member reached from the physical side (tunnel \(up ? "up" : "down"))")
                #expect(try connect(from: s.net.wan, to: address, port: 7001), "non-member reached from the physical side")
            }
        }
        let answers = try capture.packets("tcp src port 7000")
        #expect(answers.isEmpty, "the member answered on the physical link: \(answers.prefix(5))")
        #expect(try capture.count("tcp src port 7001 and tcp[tcpflags] & (tcp-syn|tcp-ack) == (tcp-syn|tcp-ack)") >= 2, "the non-member's SYN-ACKs are seen")
        #expect(try capture.count("ip6 and tcp src port 7001") >= 1)
        #expect(try s.daemon.status().profiles[0].droppedByKillswitch.packets >= 4)
    }
}
