import Foundation
import NetTestSupport
import Testing

/// Proof 5: vpnexec run by unprivileged users, allowed by name or by group, or refused
/// with the rule that decided; the command's argv, uid and exit status pass through.
@Suite(.serialized) struct AccessTests {
    @Test func allowedAndRefusedUsers() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let group = try TestGroup("vxg\(tag)", cleanup: cleanup)
        let byName = try TestUser("vxa\(tag)", cleanup: cleanup)
        let byGroup = try TestUser("vxb\(tag)", groups: [group.name], cleanup: cleanup)
        let outsider = try TestUser("vxc\(tag)", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup) { interfaces in
            """
            [profile.work]
            tunnel.interface = "\(interfaces[0])"
            users = ["\(byName.name)"]
            groups = ["\(group.name)"]
            """
        }
        let (net, daemon) = (s.net, s.daemon)

        for user in [byName, byGroup] {
            let exit = try Command.status(try daemon.vpnexec(profile: "work", user: user.name, ["sh", "-c", "exit 42"]))
            #expect(exit.status == 42, "\(user.name): \(exit.stderr)")
            let argv = try Command.run(try daemon.vpnexec(profile: "work", user: user.name,
                                                          ["python3", "-c", "import sys; print('|'.join(sys.argv[1:]))", "a", "b c", "--flag", "", "-p"]))
            #expect(argv == "a|b c|--flag||-p\n")
            // Never gains privilege: the command runs as the user.
            let uid = try Command.run(try daemon.vpnexec(profile: "work", user: user.name, ["id", "-u"])).trimmed
            #expect(uid == (try Command.run(["id", "-u", user.name])).trimmed)
            #expect(try s.member(user: user.name) == s.tunnel.clientAddress4)
        }
        let environment = try Command.run(try daemon.vpnexec(profile: "work", user: byName.name, ["sh", "-c", "echo $VX_MARKER"]) .map { $0 }, environment: ["VX_MARKER": "kept", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
        #expect(environment.trimmed == "kept")

        let refused = try Command.status(try daemon.vpnexec(profile: "work", user: outsider.name, ["true"]))
        #expect(refused.status == 125, "vpnexec's own failure, never the command's status")
        #expect(refused.stderr.contains("vpnexec: \(outsider.name) (uid"))
        #expect(refused.stderr.contains("may not use profile \"work\": the rule at \(daemon.policyDirectory)/10-test.toml:3:1 allows user \(byName.name)"))
        #expect(refused.stderr.contains("group \(group.name)"))

        let unknown = try Command.status(try daemon.vpnexec(profile: "play", user: byName.name, ["true"]))
        #expect(unknown.status == 125)
        #expect(unknown.stderr == "vpnexec: unknown profile \"play\" (profiles you may use: work)\n", "\(unknown.stderr)")

        // Without [system] and bypass.executables there is no bypass slice to start in: said plainly, even to root.
        let bypass = try Command.status(net.client.enter + [try Binaries.path("vpnexec"), "--socket", daemon.socketPath, "--bypass", "--", "true"])
        #expect(bypass.status == 125)
        #expect(bypass.stderr.contains("this policy has no bypass slice") && !bypass.stderr.contains("No such file"), "\(bypass.stderr)")

        let missing = try Command.status(try daemon.vpnexec(profile: "work", user: byName.name, ["/nonexistent/cmd"]))
        #expect(missing.status == 127)

        // Only their own processes, and only root reloads or takes everything down.
        let sleeper = try BackgroundProcess(daemon.asUser(byName.name) + ["sleep", "30"], cleanup: cleanup)
        let asOther = try daemon.vpnctl(user: byGroup.name, ["move", "-p", "work", String(sleeper.pid)])
        #expect(asOther.status == 1)
        #expect(asOther.stderr.contains("may only move its own processes"))
        for command in [["reload"], ["teardown", "--remove-killswitch"]] {
            let result = try daemon.vpnctl(user: byName.name, command)
            #expect(result.status == 1)
            #expect(result.stderr.contains("only root may"))
        }
        #expect((try daemon.status()).profiles[0].tunnel.state == "up", "refused requests changed nothing")
        let binary = try FileManager.default.attributesOfItem(atPath: try Binaries.path("vpnexec"))
        #expect(((binary[.posixPermissions] as? Int) ?? 0) & 0o6000 == 0, "vpnexec is neither setuid nor setgid")
    }

    @Test func daemonNotRunningGetsAOneLineHint() throws {
        let result = try Command.status([try Binaries.path("vpnexec"), "--socket", "/tmp/vx-none-\(uniqueTag()).sock", "-p", "work", "true"])
        #expect(result.status == 125)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("vpnd is not running"))
        let ctl = try Command.status([try Binaries.path("vpnctl"), "status", "--socket", "/tmp/vx-none-\(uniqueTag()).sock"])
        #expect(ctl.status == 1 && ctl.stderr.contains("vpnd is not running"))
    }
}
