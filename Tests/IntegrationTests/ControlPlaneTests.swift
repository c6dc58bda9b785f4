import Foundation
import NetTestSupport
import Testing

/// The control socket cannot be turned against the host: the caller is named by a pidfd,
/// never a bare pid; users move only what nothing confines; one user cannot lock the
/// others out.
@Suite(.serialized) struct ControlPlaneTests {
    /// On a kernel without SO_PEERPIDFD (simulated with seccomp), the connecting process
    /// exits and its pid is handed to another user's process; the connection's survivor
    /// asks vpnd to move "the caller". vpnd refuses, with or without a pidfd naming the
    /// victim, and the victim stays where it was. vpnexec itself still works there.
    @Test func aReusedPidIsNeverMoved() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let attacker = try TestUser("vxp\(tag)", cleanup: cleanup)
        let victim = try TestUser("vxv\(tag)", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup, start: false) { "[profile.work]\ntunnel.interface = \"\($0[0])\"\nusers = [\"\(attacker.name)\"]\n" }
        let oldKernel = try PythonScript.write("oldkernel.py", cleanup: cleanup)
        let race = try PythonScript.write("pidreuse.py", cleanup: cleanup)
        s.daemon.launcher = ["python3", oldKernel, "peerpidfd"]
        try s.daemon.start()
        #expect(try s.member(user: attacker.name) == s.tunnel.clientAddress4, "vpnexec works without SO_PEERPIDFD: it sends its own pidfd")

        let uid = { (name: String) in try Command.run(["id", "-u", name]).trimmed }
        for (passing, reason) in [("none", "the client sent no pidfd of itself"),
                                  ("victim-pidfd", "names pid")] {
            let out = try s.net.client.run(["python3", race, s.daemon.socketPath, "work", try uid(attacker.name), try uid(victim.name), passing])
            let lines = Dictionary(out.split(separator: "\n").compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmed)
            }, uniquingKeysWith: { a, _ in a })
            let victimCgroup = try #require(lines["victim"])
            #expect(!victimCgroup.contains("vpn-work.slice"), "\(passing): the victim was moved into the profile")
            let response = try #require(lines["response"])
            #expect(response.contains("\"ok\":false") && response.contains(reason), "\(passing): \(response)")
        }
    }

    /// A user's process in a system unit's cgroup, or in another profile, stays there
    /// (vpnexec and vpnctl move refuse and name the rule); in the user's own session it
    /// may move; root may move anything.
    @Test func usersCannotTakeProcessesOutOfWhatConfinesThem() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let user = try TestUser("vxu\(tag)", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup, tunnels: 2) { interfaces in
            ["work", "home"].enumerated().map { "[profile.\($1)]\ntunnel.interface = \"\(interfaces[$0])\"\nusers = [\"\(user.name)\"]\n" }.joined(separator: "\n")
        }
        let root = try TestCgroups.cgroupRoot()
        let uid = try Command.run(["id", "-u", user.name]).trimmed
        let unit = "vxunit-\(tag).service"
        let session = "user.slice/user-\(uid).slice/session-vx\(tag).scope"
        let madeUserSlice = !FileManager.default.fileExists(atPath: "\(root)/user.slice")
        try FileManager.default.createDirectory(atPath: "\(root)/\(unit)", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: "\(root)/\(session)", withIntermediateDirectories: true)
        cleanup.add("remove test cgroups") {
            try TestCgroups.removeTree(unit)
            try TestCgroups.removeTree("user.slice/user-\(uid).slice")
            if madeUserSlice { try TestCgroups.removeTree("user.slice") }
        }
        /// A command run as the user from inside a cgroup root put it in.
        func placed(in cgroup: String, _ command: [String]) -> [String] {
            s.net.client.enter + ["sh", "-c", "echo $$ > \(root)/\(cgroup)/cgroup.procs && exec \"$@\"", "sh"]
                + TestUser.become(user.name) + command
        }
        let vpnexec = try Binaries.path("vpnexec")

        let fromUnit = try Command.status(placed(in: unit, [vpnexec, "--socket", s.daemon.socketPath, "-p", "work", "--", "true"]))
        #expect(fromUnit.status == 125)
        #expect(fromUnit.stderr.contains("may not move pid") && fromUnit.stderr.contains("out of \(unit)")
                && fromUnit.stderr.contains("never out of a system unit"), "\(fromUnit.stderr)")
        let sleeper = try BackgroundProcess(placed(in: unit, ["sleep", "60"]), cleanup: cleanup)
        try eventually("the sleeper in \(unit)") { (try? String(contentsOfFile: "/proc/\(sleeper.pid)/cgroup", encoding: .utf8))?.contains(unit) == true }
        let moved = try s.daemon.vpnctl(user: user.name, ["move", "-p", "work", String(sleeper.pid)])
        #expect(moved.status == 1 && moved.stderr.contains("never out of a system unit"), "\(moved.stderr)")
        #expect(try s.daemon.vpnctl(user: nil, ["move", "-p", "work", String(sleeper.pid)]).status == 0, "root may move anything")
        sleeper.stop()

        let nested = try Command.status(try s.daemon.vpnexec(profile: "work", user: user.name, [vpnexec, "--socket", s.daemon.socketPath, "-p", "home", "--", "true"]))
        #expect(nested.status == 125 && nested.stderr.contains("only root may take a process out of a profile")
                && nested.stderr.contains("profile work's cgroup"), "\(nested.stderr)")
        let member = try BackgroundProcess(try s.daemon.vpnexec(profile: "work", user: user.name, ["sleep", "60"]), cleanup: cleanup)
        try eventually("the member in profile work") { (try? String(contentsOfFile: "/proc/\(member.pid)/cgroup", encoding: .utf8))?.contains("vpn-work.slice") == true }
        let out = try s.daemon.vpnctl(user: user.name, ["move", "-p", "home", String(member.pid)])
        #expect(out.status == 1 && out.stderr.contains("only root may take a process out of a profile"), "\(out.stderr)")
        member.stop()

        let fromSession = try Command.status(placed(in: session, [vpnexec, "--socket", s.daemon.socketPath, "-p", "work", "--", "cat", "/proc/self/cgroup"]))
        #expect(fromSession.status == 0, "\(fromSession.stderr)")
        #expect(fromSession.stdout.contains("vpn-work.slice"), "a process of the user's own session may join")
        #expect(try s.member(user: user.name) == s.tunnels[0].clientAddress4, "and one of the root cgroup (no cgroup manager)")
    }

    /// One user holding 100 connections (and opening new ones as fast as vpnd closes
    /// them) does not stop another user's vpnexec, 50 times of 50, nor root's vpnctl.
    @Test func oneUsersFloodDoesNotLockOthersOut() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let flooder = try TestUser("vxf\(tag)", cleanup: cleanup)
        let user = try TestUser("vxo\(tag)", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup) { "[profile.work]\ntunnel.interface = \"\($0[0])\"\nusers = [\"\(user.name)\"]\n" }
        let flood = try PythonScript.write("flood.py", cleanup: cleanup)
        let attack = try BackgroundProcess(s.daemon.asUser(flooder.name) + ["python3", flood, s.daemon.socketPath, "100", "60"], cleanup: cleanup)
        try eventually("vpnd to refuse the flooder's surplus") {
            guard attack.isRunning else { throw TestEnvironmentError("the flood ended: \(attack.output)") }
            return try (s.daemon.status().refusedConnections ?? 0) > 50
        }
        var failures: [String] = []
        for _ in 1...50 {
            let result = try Command.status(try s.daemon.vpnexec(profile: "work", user: user.name, ["true"]))
            if result.status != 0 { failures.append(result.stderr) }
        }
        #expect(failures.isEmpty, "\(failures.count) of 50 failed: \(failures.prefix(3))")
        let status = try s.daemon.vpnctl(["status"])
        #expect(status.status == 0, "root's vpnctl during the flood: \(status.stderr)")
        #expect(attack.isRunning, "the flood was still going on")
        attack.stop()
    }
}
