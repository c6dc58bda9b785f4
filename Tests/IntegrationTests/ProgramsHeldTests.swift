import Foundation
import NetTestSupport
import Testing

/// No member without its socket programs. A program attached to the profile parent without
/// BPF_F_ALLOW_MULTI before vpnd starts keeps vpnd's programs out of the parent and every
/// cgroup below it: vpnd says so in status (read from the kernel), refuses to place anyone
/// in the profile with the reason, and holds what a process put there by hand sends (only
/// loopback: not one packet in the clear, the tunnel up or down). Once the program is
/// gone, vpnd's are attached within a second and the profile works. Programs taken off by
/// hand are put back within a second, and vpnd says so.
@Suite(.serialized) struct ProgramsHeldTests {
    @Test func aProfileWithoutItsProgramsIsHeldAndRefused() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Scenario.profiles(["work"]))
        let root = try TestCgroups.cgroupRoot()
        let parent = root + "/" + s.daemon.cgroupParent
        try FileManager.default.createDirectory(atPath: parent + "/vpn-work.slice", withIntermediateDirectories: true)
        let bpf = try PythonScript.write("cgroupbpf.py", cleanup: cleanup)
        try Command.run(["python3", bpf, "attach-exclusive", parent])
        try s.daemon.start()

        let status = try s.daemon.status()
        let held = status.heldCgroups.map(\.cgroup)
        #expect(held.contains(s.daemon.cgroupParent + "/vpn-work.slice") && held.contains(s.daemon.cgroupParent), "\(status.heldCgroups)")
        #expect(status.heldCgroups.allSatisfy { $0.missing.contains("vx_create") && $0.reason.contains("Operation not permitted") })
        #expect(status.birthMarks.allSatisfy { $0.state == "held" } && status.birthMarks.map(\.cgroup) == [s.daemon.cgroupParent + "/vpn-work.slice"],
                "no cgroup's sockets are born marked; the profile's is held: \(status.birthMarks)")
        let text = try s.daemon.vpnctl(["status"]).stdout
        #expect(text.contains("HELD: profile work, \(s.daemon.cgroupParent)/vpn-work.slice: the kernel does not have its socket programs"), "\(text)")

        let refused = try Command.status(try s.daemon.vpnexec(profile: "work", ["true"]))
        #expect(refused.status != 0 && refused.stderr.contains("profile work is held") && refused.stderr.contains("BPF_F_ALLOW_MULTI"), "\(refused.stderr)")
        let moved = try s.daemon.vpnctl(["move", "--profile", "work", String(getpid())])
        #expect(moved.status != 0 && moved.stderr.contains("profile work is held"), "\(moved.stderr)")

        // A process in the profile's cgroup all the same (an admin's echo into cgroup.procs,
        // a unit in the slice): held, the tunnel up and then down.
        let procs = parent + "/vpn-work.slice/cgroup.procs"
        let watch = try s.captureCleartext()
        let member = try BackgroundProcess(s.net.client.enter + ["sh", "-c", "echo $$ > \(procs) && exec python3 \(s.probe) udp-loop \(Topology.service4) 8080"], cleanup: cleanup)
        try eventually("the hold to drop the member's datagrams") { try (s.daemon.status().droppedHeld?.packets ?? 0) > 5 }
        try s.tunnel.setClientLink(up: false)
        let dropped = try s.daemon.status().droppedHeld?.packets ?? 0
        try eventually("more dropped with the tunnel down") { try (s.daemon.status().droppedHeld?.packets ?? 0) > dropped + 5 }
        member.stop()
        let (leaked, control) = try watch.stop()
        #expect(leaked.isEmpty, "a held member's datagrams in the clear: \(leaked.prefix(5))")
        #expect(control > 0, "the capture sees the non-member's datagrams")
        #expect(s.services.count("udp \(s.tunnel.clientAddress4)") == 0, "nor through the tunnel: its sockets have no mark")
        try s.tunnel.setClientLink(up: true)

        // The program goes: vpnd's take its place, and the profile works.
        try Command.run(["python3", bpf, "detach-exclusive", parent])
        try eventually("the hold to end") { try s.daemon.status().heldCgroups.isEmpty }
        #expect(try s.member() == s.tunnel.clientAddress4)
        #expect(try s.daemon.status().birthMarks.contains { $0.cgroup.hasSuffix("vpn-work.slice") && $0.state == "marked" })

        // Someone takes vpnd's programs off the profile's cgroup and the parent: put back
        // within a second or so, and said so.
        // (Not counted right after the detach: vpnd may have put them back already.)
        let putBack = try s.daemon.status().socketProgramsPutBack ?? 0
        for path in [parent + "/vpn-work.slice", parent] { try Command.run(["python3", bpf, "detach-all", path]) }
        try eventually("the programs to be back") {
            try Command.run(["python3", bpf, "count", parent + "/vpn-work.slice", "vx_"]).trimmed != "0" && (try s.daemon.status().socketProgramsPutBack ?? 0) >= putBack + 2
        }
        #expect(try s.member() == s.tunnel.clientAddress4, "a new member's socket is born marked again")
        let log = try #require(s.daemon.process).output
        #expect(log.contains("put back vx_create") && log.contains("detached by someone else"), "\(log.suffix(2000))")
        #expect(try s.daemon.vpnctl(["status", "--verbose"]).stdout.contains("socket programs: "), "status says so")
    }
}
