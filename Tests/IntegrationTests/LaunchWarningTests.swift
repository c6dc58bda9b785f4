import Foundation
import NetTestSupport
import Testing

/// vpnexec's two warnings before it execs (issue 43, items 2 and 3), from a real vpnd: a
/// browser already running for the user outside the profile (which would take the launch
/// over), and a tunnel that is down or missing (the killswitch holds the launch). Each is
/// one line on stderr, and the command runs all the same.
@Suite(.serialized) struct LaunchWarningTests {
    @Test func aLaunchIntoAProfileWhoseTunnelIsDownOrMissingSaysSo() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let interface = s.tunnel.clientInterface
        func launch() throws -> CommandResult { try Command.status(try s.daemon.vpnexec(profile: "work", ["true"])) }
        let up = try launch()
        #expect(up.status == 0 && up.stderr == "", "\(up.stderr)")

        try s.tunnel.setClientLink(up: false)
        try eventually("vpnd to see the tunnel down") { try s.daemon.status().profiles[0].tunnel.state == "down" }
        let down = try launch()
        #expect(down.status == 0, "still run")
        #expect(down.stderr == "vpnexec: warning: profile work's tunnel \(interface) is down: until it is up, true's connections fail (\"No route to host\") or time out; nothing leaves outside the tunnel\n", "\(down.stderr)")
        // What the warning says members get.
        #expect(throws: CommandError.self, "a member's connection fails") { try s.member() }

        try s.tunnel.deleteClientInterface()
        try eventually("vpnd to see the tunnel gone") { try s.daemon.status().profiles[0].tunnel.state == "missing" }
        let missing = try launch()
        #expect(missing.status == 0)
        #expect(missing.stderr == "vpnexec: warning: profile work's tunnel \(interface) is missing: until it is there, true's connections fail (\"No route to host\"); nothing leaves outside the tunnel\n", "\(missing.stderr)")

        try s.tunnel.bringClientUp()
        try eventually("vpnd to see the tunnel back") { try s.daemon.status().profiles[0].tunnel.state == "up" }
        let back = try launch()
        #expect(back.status == 0 && back.stderr == "", "\(back.stderr)")
    }

    @Test func aBrowserAlreadyRunningForTheUserOutsideTheProfileIsNamed() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let user = try TestUser("vxf\(tag)", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup) { interfaces in
            "[profile.work]\ntunnel.interface = \"\(interfaces[0])\"\nusers = [\"\(user.name)\", \"root\"]\n"
        }
        // Firefox as two files of one name: a launcher that exits at once whatever it is
        // given (a launch handed over), and a copy of sleep for a running browser (one
        // process, nothing left behind when it is stopped).
        let directory = "/tmp/vx-firefox-\(tag)"
        try FileManager.default.createDirectory(atPath: directory + "/running", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        chmod(directory, 0o755)
        cleanup.add("remove \(directory)") { try? FileManager.default.removeItem(atPath: directory) }
        let firefox = directory + "/firefox", browser = directory + "/running/firefox"
        try "#!/bin/sh\nexit 0\n".write(toFile: firefox, atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: "/usr/bin/sleep", toPath: browser)
        for path in [firefox, browser] { chmod(path, 0o755) }
        func launch(_ arguments: [String] = [], as name: String? = user.name) throws -> CommandResult {
            try Command.status(try s.daemon.vpnexec(profile: "work", user: name, [firefox] + arguments))
        }
        func running() throws -> [Int32] {
            let result = try Command.status(["pgrep", "-u", user.name, "-x", "firefox"])
            return result.stdout.split(separator: "\n").compactMap { Int32($0) }.sorted()
        }

        let alone = try launch()
        #expect(alone.status == 0 && alone.stderr == "", "nothing runs yet: \(alone.stderr)")

        let outside = try BackgroundProcess(s.daemon.asUser(user.name) + [browser, "600"], cleanup: cleanup)
        try eventually("the user's firefox to run") { try running().count == 1 }
        let pid = try running()[0]
        let taken = try launch()
        #expect(taken.status == 0, "still run")
        #expect(taken.stderr == "vpnexec: warning: firefox already runs for you outside profile work (pid \(pid)): this launch may just open a window in it, outside the profile; start a separate instance (vpnexec -p work -- \(firefox) --new-instance -P work), quit the running one first, or have the policy put it in the profile wherever it starts (route.executables, apps)\n", "\(taken.stderr)")
        let separate = try launch(["--new-instance", "-P", "work"])
        #expect(separate.status == 0 && separate.stderr == "", "a separate instance is what the warning asks for: \(separate.stderr)")
        let root = try launch(as: nil)
        #expect(root.status == 0 && root.stderr == "", "root has no firefox running: \(root.stderr)")

        // One running in the profile is where the launch should go.
        outside.stop()
        try eventually("the firefox outside to exit") { try running().isEmpty }
        let inside = try BackgroundProcess(try s.daemon.vpnexec(profile: "work", user: user.name, [browser, "600"]), cleanup: cleanup)
        try eventually("the user's firefox to run in the profile") { try running().count == 1 }
        let joined = try launch()
        #expect(joined.status == 0 && joined.stderr == "", "\(joined.stderr)")
        #expect(inside.output == "", "the launch in the profile found nothing outside: \(inside.output)")
    }
}
