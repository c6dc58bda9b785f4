import Control
import Foundation
import NetTestSupport
import Testing

/// `vpnctl explain` against what the far end sees: for a member, a bypassed process and a
/// non-member (and a listed bypass program, named by its list's entry), the source address
/// and interface explain gives (the kernel's route lookup
/// with the process's mark) are those the service saw from that very process, IPv4 and
/// IPv6; `explain -p work --probe` connects from inside the profile and gets the tunnel's
/// address.
@Suite(.serialized) struct ExplainTests {
    @Test func explainMatchesWhatTheServiceSees() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Scenario.profiles(["work"]))
        // A bypass.executables entry gives the policy its bypass slice (vpnexec --bypass).
        let bypassed = try ExecutableExceptionTests.program("bypassed-python", in: "/tmp/vx-\(s.net.tag)/bin")
        try s.daemon.writePolicy("""
            [profile.work]
            tunnel.interface = "\(s.tunnel.clientInterface)"
            bypass.executables = ["\(bypassed)"]
            """)
        try s.daemon.start()
        let vpnexec = try Binaries.path("vpnexec")
        // Killed at the end: a SIGTERM the sleeps would take two seconds each to end here.
        var started: [BackgroundProcess] = []
        defer { started.forEach { $0.kill9() } }

        /// A process that connects over IPv4 and IPv6 (its children, in its cgroup), prints
        /// the sources the service saw, then waits to be explained.
        func process(through prefix: [String]) throws -> (pid: Int32, seen: [String]) {
            let script = "python3 \(s.probe) tcp \(Topology.service4) 8080; python3 \(s.probe) tcp \(Topology.service6) 8080; exec sleep 30"
            let running = try BackgroundProcess(s.net.client.enter + prefix + ["sh", "-c", script], cleanup: cleanup)
            started.append(running)
            try eventually("both connections of \(prefix.first ?? "a plain process")") { running.output.split(separator: "\n").count >= 2 || !running.isRunning }
            return (running.pid, running.output.split(separator: "\n").map { String($0).trimmed })
        }
        func explain(_ arguments: [String]) throws -> Explanation {
            let result = try s.daemon.vpnctl(user: nil, ["explain", "--json"] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
            return try ControlCoding.decode(Explanation.self, from: Array(result.stdout.utf8))
        }
        func sources(_ explanation: Explanation) -> [String] {
            explanation.routes.map { $0.source ?? "none" }
        }

        let member = try process(through: [vpnexec, "--socket", s.daemon.socketPath, "-p", "work", "--"])
        #expect(member.seen == [s.tunnel.clientAddress4, s.tunnel.clientAddress6])
        let memberExplained = try explain([String(member.pid)])
        #expect(memberExplained.placement == Explanation.profileCgroup && memberExplained.profile == "work")
        #expect(sources(memberExplained) == member.seen, "\(memberExplained.routes)")
        #expect(memberExplained.routes.allSatisfy { $0.throughTunnel && $0.interface == s.tunnel.clientInterface })
        #expect(memberExplained.mark != nil && memberExplained.killswitch?.holding == false)
        // The scenario's profile has no resolvers: its proxy refuses members' queries.
        #expect(memberExplained.dns.port53 == ExplainedDNS.refused && memberExplained.dns.failure?.contains("no resolvers") == true)

        let bypass = try process(through: [vpnexec, "--socket", s.daemon.socketPath, "--bypass", "--"])
        #expect(bypass.seen == [Topology.clientAddress4, Topology.clientAddress6])
        let bypassExplained = try explain([String(bypass.pid)])
        #expect(bypassExplained.placement == Explanation.bypass && bypassExplained.profile == nil)
        #expect(sources(bypassExplained) == bypass.seen, "\(bypassExplained.routes)")
        #expect(bypassExplained.routes.allSatisfy { !$0.throughTunnel && $0.interface == s.net.clientUplink })

        // A bypass.executables program started in the profile: moved out by vpnd, and
        // explain names the list's entry.
        let script = """
            import subprocess, time
            for _ in range(50):
                if "vpn-bypass.slice" in open("/proc/self/cgroup").read(): break
                time.sleep(0.1)
            for host in ("\(Topology.service4)", "\(Topology.service6)"):
                print(subprocess.run(["python3", "\(s.probe)", "tcp", host, "8080"], capture_output=True, text=True).stdout.strip(), flush=True)
            time.sleep(30)
            """
        let listed = try BackgroundProcess(s.net.client.enter + [vpnexec, "--socket", s.daemon.socketPath, "-p", "work", "--", bypassed, "-c", script],
                                           cleanup: cleanup)
        started.append(listed)
        try eventually("both connections of the listed program") { listed.output.split(separator: "\n").count >= 2 || !listed.isRunning }
        #expect(listed.output.split(separator: "\n").map { String($0) } == [Topology.clientAddress4, Topology.clientAddress6], "\(listed.output)")
        let listedExplained = try explain([String(listed.pid)])
        #expect(listedExplained.placement == Explanation.bypass && listedExplained.rule.contains("it runs \(bypassed), in profile work's bypass.executables ("),
                "\(listedExplained.rule)")
        #expect(sources(listedExplained) == [Topology.clientAddress4, Topology.clientAddress6], "\(listedExplained.routes)")

        let plain = try process(through: [])
        #expect(plain.seen == [Topology.clientAddress4, Topology.clientAddress6])
        let plainExplained = try explain([String(plain.pid)])
        #expect(plainExplained.placement == Explanation.outside && plainExplained.mark == nil)
        #expect(sources(plainExplained) == plain.seen, "\(plainExplained.routes)")
        #expect(plainExplained.dns.port53 == ExplainedDNS.host)

        // A process in a network namespace of its own (the server's, here): said, with both.
        let elsewhere = try BackgroundProcess(s.net.server.enter + ["sleep", "30"], cleanup: cleanup)
        started.append(elsewhere)
        let elsewhereExplained = try explain([String(elsewhere.pid)])
        #expect(elsewhereExplained.namespace?.state == ExplainedNamespace.unknown && elsewhereExplained.namespace?.reason?.contains("not vpnctl's net:[") == true,
                "\(String(describing: elsewhereExplained.namespace))")

        // A user explains its own processes only: root's member is refused, its own sleep not.
        let user = try TestUser("vxe\(s.net.tag)", cleanup: cleanup)
        let refused = try s.daemon.vpnctl(user: user.name, ["explain", String(member.pid)])
        #expect(refused.status == 1 && refused.stderr.contains("may explain only its own processes"), "\(refused.stderr)")
        let own = try BackgroundProcess(s.daemon.asUser(user.name) + ["sleep", "30"], cleanup: cleanup)
        started.append(own)
        let ownExplained = try s.daemon.vpnctl(user: user.name, ["explain", String(own.pid)])
        #expect(ownExplained.status == 0 && ownExplained.stdout.hasPrefix("pid \(own.pid) (sleep 30) is in no profile; IPv4 goes direct via \(s.net.clientUplink) from \(Topology.clientAddress4);"),
                "\(ownExplained.stdout)\(ownExplained.stderr)")

        let probed = try explain(["-p", "work", "--probe", "\(Topology.service4):8080"])
        #expect(probed.pid == nil && probed.placement == Explanation.profileCgroup)
        #expect(probed.probe?.localAddress == s.tunnel.clientAddress4 && probed.probe?.connected == true && probed.probe?.tunnelAddress == true,
                "\(String(describing: probed.probe))")
        let probed6 = try explain(["-p", "work", "--probe", "[\(Topology.service6)]:8080"])
        #expect(probed6.probe?.localAddress == s.tunnel.clientAddress6 && probed6.probe?.tunnelAddress == true, "\(String(describing: probed6.probe))")

        // The text leads with the answer.
        let text = try s.daemon.vpnctl(user: nil, ["explain", String(member.pid)])
        #expect(text.stdout.hasPrefix("pid \(member.pid) (sleep 30) is in profile work; IPv4 goes through tunnel \(s.tunnel.clientInterface) from \(s.tunnel.clientAddress4);"),
                "\(text.stdout)")
    }
}
