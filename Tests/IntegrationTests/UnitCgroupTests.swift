import Foundation
import NetTestSupport
import Testing

/// Cgroups systemd makes that join a profile by their name, found as they appear (the
/// cgroup tree laid out here as systemd lays it out; VpndServiceTests has a real one): a
/// desktop app's scope whose app id the profile lists, and a user's own vpn-work.slice,
/// for a user the profile allows; another user's vpn-work.slice is refused and stays out.
@Suite(.serialized) struct UnitCgroupTests {
    @Test func unitsNamedForAProfileJoinItForAllowedUsersOnly() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let alice = try TestUser("vxa\(tag)", cleanup: cleanup)
        let mallory = try TestUser("vxm\(tag)", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup) {
            "[profile.work]\ntunnel.interface = \"\($0[0])\"\nusers = [\"\(alice.name)\"]\napps = [\"org.example.App\"]\n"
        }
        let root = try TestCgroups.cgroupRoot()
        let madeUserSlice = !FileManager.default.fileExists(atPath: "\(root)/user.slice")
        cleanup.add("remove user.slice") { if madeUserSlice { try TestCgroups.removeTree("user.slice") } }
        var managers: [String: String] = [:]
        for user in [alice, mallory] {
            let uid = try Command.run(["id", "-u", user.name]).trimmed
            managers[user.name] = "user.slice/user-\(uid).slice/user@\(uid).service"
            cleanup.add("remove \(user.name)'s cgroups") { try TestCgroups.removeTree("user.slice/user-\(uid).slice") }
        }
        let app = managers[alice.name]! + "/app.slice/app-gnome-org.example.App-4242.scope"
        let slice = managers[alice.name]! + "/vpn.slice/vpn-work.slice/run-u7.service"
        let foreign = managers[mallory.name]! + "/vpn.slice/vpn-work.slice/run-u9.service"
        let other = managers[alice.name]! + "/app.slice/app-gnome-org.example.Other-4243.scope"
        let rulesBefore = try NftCLI.ruleHandles(in: s.net.client)
        // Made while vpnd runs, as systemd makes them when a unit starts.
        for path in [app, slice, foreign, other] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(path)", withIntermediateDirectories: true)
        }
        try eventually("vpnd to find the units") {
            try s.daemon.status().profiles[0].joinedCgroups == [managers[alice.name]! + "/app.slice/app-gnome-org.example.App-4242.scope",
                                                                managers[alice.name]! + "/vpn.slice/vpn-work.slice"]
        }
        #expect(try NftCLI.ruleHandles(in: s.net.client) == rulesBefore, "joins at systemd's depths are map elements: no rule re-added")
        /// The probe as `user`, started inside `cgroup` (as systemd starts a unit's process).
        func from(_ cgroup: String, as user: TestUser, to service: String = Topology.service4) throws -> String {
            try Command.run(s.net.client.enter + ["sh", "-c", "echo $$ > \(root)/\(cgroup)/cgroup.procs && exec \"$@\"", "sh"]
                            + TestUser.become(user.name) + ["python3", s.probe, "tcp", service, "8080"]).trimmed
        }
        #expect(try from(app, as: alice) == s.tunnel.clientAddress4, "a listed app's scope is tunneled")
        #expect(try from(app, as: alice, to: Topology.service6) == s.tunnel.clientAddress6)
        #expect(try from(slice, as: alice) == s.tunnel.clientAddress4, "a unit in the user's vpn-work.slice is tunneled")
        #expect(try from(other, as: alice) == Topology.clientAddress4, "an app the profile does not list is not")
        #expect(try from(foreign, as: mallory) == Topology.clientAddress4, "a user the profile does not allow stays out")
        // Logged when vpnd first sees the cgroup: at an inotify event or its check each second.
        let refusal = "refused: \(managers[mallory.name]!)/vpn.slice/vpn-work.slice is named to join a profile but uid"
        try eventually("vpnd to log the refusal") {
            let log = s.daemon.process?.output ?? ""
            return log.contains(refusal) && log.contains("may not use profile \"work\"")
        }
        let status = try s.daemon.vpnctl(["status", "--verbose"]).stdout
        #expect(status.contains("app-gnome-org.example.App-4242.scope"), "\(status)")
    }
}
