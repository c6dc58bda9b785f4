import Control
import Foundation
import NetTestSupport
import Testing

/// Sockets are born in their tunnel: a member's socket carries its profile's mark from its
/// creation, so its own address (`getsockname()`, what SIP, FTP or WebRTC write into their
/// payload) is the tunnel's, the same the server sees; v4 and v6, TCP and connected UDP.
@Suite(.serialized) struct BirthMarkTests {
    static let profileMark = "0x1000000"

    @Test func aMembersOwnAddressIsTheTunnels() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        for (service, tunnel, physical) in [(Topology.service4, s.tunnel.clientAddress4, Topology.clientAddress4),
                                            (Topology.service6, s.tunnel.clientAddress6, Topology.clientAddress6)] {
            for mode in ["tcp-name", "udp-name"] {
                #expect(try s.member(mode: mode, to: service) == "\(tunnel) \(tunnel)", "a member's own address and the one the server saw (\(mode) to \(service))")
                #expect(try s.connect(mode, to: service) == "\(physical) \(physical)", "a non-member's (\(mode) to \(service))")
            }
        }
        #expect(try s.member(mode: "mark") == Self.profileMark, "a member's socket has the mark from its creation")
        #expect(try s.connect("mark") == "0x0")
        let status = try s.daemon.status().birthMarks
        #expect(status == [BirthMarkReport(cgroup: "\(s.daemon.cgroupParent)/vpn-work.slice", profile: "work", state: "marked", mark: Self.profileMark)], "\(status)")
        #expect(try s.daemon.vpnctl(["status", "--verbose"]).stdout.contains("sockets born marked: 1 cgroup: "))

        // The attachments are the kernel's: with vpnd gone, a member's new socket is born
        // marked all the same, its address the tunnel's.
        s.daemon.process?.kill9()
        let root = try TestCgroups.cgroupRoot()
        let inProfile = s.net.client.enter + ["sh", "-c", "echo $$ > \(root)/\(s.daemon.cgroupParent)/vpn-work.slice/cgroup.procs && exec \"$@\"", "sh",
                                              "python3", s.probe]
        #expect(try Command.run(inProfile + ["mark", Topology.service4, "8080"]).trimmed == Self.profileMark, "the attachments outlive vpnd")
        #expect(try Command.run(inProfile + ["tcp-name", Topology.service4, "8080"]).trimmed == "\(s.tunnel.clientAddress4) \(s.tunnel.clientAddress4)")
        // A restarted vpnd takes them over: the same attachments, its own programs.
        try s.daemon.start()
        #expect(try s.daemon.status().birthMarks.map(\.cgroup) == ["\(s.daemon.cgroupParent)/vpn-work.slice"])
        #expect(try Command.run(inProfile + ["mark", Topology.service4, "8080"]).trimmed == Self.profileMark)
    }

    /// The attachments follow the plan: a profile cgroup made again (a new id, as when
    /// systemd stops and starts a slice) gets a new one, and a reload that changes the
    /// profile's mark changes what its new sockets are born with.
    @Test func attachmentsFollowCgroupsAndMarks() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        #expect(try s.member(mode: "mark") == Self.profileMark)
        let slice = try TestCgroups.cgroupRoot() + "/\(s.daemon.cgroupParent)/vpn-work.slice"
        for child in (try? FileManager.default.contentsOfDirectory(atPath: slice)) ?? [] { _ = rmdir(slice + "/" + child) }
        #expect(rmdir(slice) == 0, "remove \(slice): \(String(cString: strerror(errno)))")
        // vpnd makes its profile cgroups again itself when it finds them gone.
        #expect(mkdir(slice, 0o755) == 0 || errno == EEXIST)
        try eventually("the cgroup made again to be attached") { (try? s.member(mode: "mark")) == Self.profileMark }
        #expect(try s.member(mode: "tcp-name") == "\(s.tunnel.clientAddress4) \(s.tunnel.clientAddress4)")

        try s.daemon.writePolicy("[profile.work]\ntunnel.interface = \"\(s.tunnel.clientInterface)\"\nmark = 0x02000000\n")
        #expect(try s.daemon.vpnctl(["reload"]).status == 0)
        #expect(try s.member(mode: "mark") == "0x2000000")
        #expect(try s.member(mode: "udp-name", to: Topology.service6) == "\(s.tunnel.clientAddress6) \(s.tunnel.clientAddress6)")
    }

    /// A socket belongs to the cgroup it was made in, for its programs as for nftables
    /// (`socket cgroupv2`): sockets a running process made before `vpnctl move` took it
    /// into the profile keep working where they were made (direct, from the physical
    /// address), while what it makes afterwards is the profile's.
    @Test func socketsMadeBeforeAMoveStayWhereTheyWereMade() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        for (service, physical) in [(Topology.service4, Topology.clientAddress4), (Topology.service6, Topology.clientAddress6)] {
            let held = try InteractiveProcess(s.net.client.enter + ["python3", s.probe, "made-before", service, "8080"], cleanup: cleanup)
            #expect(try held.readLine() == "ready")
            let moved = try s.daemon.vpnctl(["move", "--profile", "work", String(held.pid)])
            #expect(moved.status == 0, "\(moved.stderr)")
            try held.writeLine("go")
            #expect(try held.readLine() == "tcp \(physical) \(physical)", "a TCP socket made before the move, to \(service)")
            #expect(try held.readLine() == "udp \(physical) \(physical)", "a UDP socket made before the move, to \(service)")
        }
    }

    /// A unit that joins a profile by its name (a listed desktop app's scope, laid out as
    /// a user's systemd makes it) is born marked too.
    @Test func aScopeJoinedByNameIsBornMarked() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let alice = try TestUser("vxb\(uniqueTag())", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup) {
            "[profile.work]\ntunnel.interface = \"\($0[0])\"\nusers = [\"\(alice.name)\"]\napps = [\"org.example.App\"]\n"
        }
        let root = try TestCgroups.cgroupRoot()
        let madeUserSlice = !FileManager.default.fileExists(atPath: "\(root)/user.slice")
        cleanup.add("remove user.slice") { if madeUserSlice { try TestCgroups.removeTree("user.slice") } }
        let uid = try Command.run(["id", "-u", alice.name]).trimmed
        cleanup.add("remove \(alice.name)'s cgroups") { try TestCgroups.removeTree("user.slice/user-\(uid).slice") }
        let app = "user.slice/user-\(uid).slice/user@\(uid).service/app.slice/app-gnome-org.example.App-4242.scope"
        try FileManager.default.createDirectory(atPath: "\(root)/\(app)", withIntermediateDirectories: true)
        try eventually("vpnd to find the scope") { try s.daemon.status().profiles[0].joinedCgroups == [app] }
        func from(_ mode: String, to service: String = Topology.service4) throws -> String {
            try Command.run(s.net.client.enter + ["sh", "-c", "echo $$ > \(root)/\(app)/cgroup.procs && exec \"$@\"", "sh"]
                            + TestUser.become(alice.name) + ["python3", s.probe, mode, service, "8080"]).trimmed
        }
        #expect(try from("mark") == Self.profileMark)
        #expect(try from("tcp-name") == "\(s.tunnel.clientAddress4) \(s.tunnel.clientAddress4)")
        #expect(try from("udp-name", to: Topology.service6) == "\(s.tunnel.clientAddress6) \(s.tunnel.clientAddress6)")
    }

    /// Nested attached cgroups: the deepest one's mark wins (its program runs first and
    /// the ancestors' leave a marked socket alone), as the nft maps look up the deepest
    /// level first. A listed app's scope inside a user's vpn-home.slice is work's; a unit
    /// of that slice without an attachment of its own is home's.
    @Test func theDeepestCgroupWins() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let alice = try TestUser("vxd\(uniqueTag())", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup, tunnels: 2) {
            "[profile.work]\ntunnel.interface = \"\($0[0])\"\nusers = [\"\(alice.name)\"]\napps = [\"org.example.App\"]\n"
                + "[profile.home]\ntunnel.interface = \"\($0[1])\"\nusers = [\"\(alice.name)\"]\n"
        }
        let root = try TestCgroups.cgroupRoot()
        let madeUserSlice = !FileManager.default.fileExists(atPath: "\(root)/user.slice")
        cleanup.add("remove user.slice") { if madeUserSlice { try TestCgroups.removeTree("user.slice") } }
        let uid = try Command.run(["id", "-u", alice.name]).trimmed
        cleanup.add("remove \(alice.name)'s cgroups") { try TestCgroups.removeTree("user.slice/user-\(uid).slice") }
        let home = "user.slice/user-\(uid).slice/user@\(uid).service/vpn.slice/vpn-home.slice"
        let app = home + "/app-gnome-org.example.App-4242.scope", unit = home + "/run-u7.service"
        for path in [app, unit] { try FileManager.default.createDirectory(atPath: "\(root)/\(path)", withIntermediateDirectories: true) }
        try eventually("vpnd to find both") {
            let profiles = try s.daemon.status().profiles
            return profiles[0].joinedCgroups == [app] && profiles[1].joinedCgroups == [home]
        }
        func from(_ cgroup: String, _ mode: String) throws -> String {
            try Command.run(s.net.client.enter + ["sh", "-c", "echo $$ > \(root)/\(cgroup)/cgroup.procs && exec \"$@\"", "sh"]
                            + TestUser.become(alice.name) + ["python3", s.probe, mode, Topology.service4, "8080"]).trimmed
        }
        #expect(try from(app, "mark") == Self.profileMark, "the app's scope: work's mark")
        #expect(try from(app, "tcp-name") == "\(s.tunnels[0].clientAddress4) \(s.tunnels[0].clientAddress4)")
        #expect(try from(unit, "mark") == "0x2000000", "a unit of vpn-home.slice: home's")
        #expect(try from(unit, "tcp-name") == "\(s.tunnels[1].clientAddress4) \(s.tunnels[1].clientAddress4)")
    }

    /// Nothing is tracked for a member: its TCP connections and datagrams, v4 and v6, leave
    /// no conntrack entry in the client's namespace (no table of ours uses connection state,
    /// so the kernel does not track there), while the same with a table that uses it (the
    /// control) leaves entries (a closed TCP connection stays in TIME_WAIT for two minutes).
    @Test func aMembersFlowsLeaveNoConnectionState() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        // The count is per network namespace. A table that uses connection state, in a
        // namespace of its own, has the kernel load conntrack, which makes it readable.
        let scratch = try NetworkNamespace("vx\(s.net.tag)k", cleanup: cleanup)
        try scratch.run(["nft", "add table inet vxtrack; add chain inet vxtrack out { type filter hook output priority 0; ct state new counter; }"])
        let tracked = { () throws -> Int in
            try #require(Int(try s.net.client.run(["cat", "/proc/sys/net/netfilter/nf_conntrack_count"]).trimmed))
        }
        let flows = { () throws in
            for service in [Topology.service4, Topology.service6] {
                #expect(try s.member(mode: "tcp-name", to: service).hasPrefix(service == Topology.service4 ? s.tunnel.clientAddress4 : s.tunnel.clientAddress6))
                #expect(try s.member(mode: "udp-name", to: service).hasPrefix(service == Topology.service4 ? s.tunnel.clientAddress4 : s.tunnel.clientAddress6))
            }
        }
        try flows()
        #expect(try tracked() == 0, "conntrack entries after a member's flows: \((try? s.net.client.run(["cat", "/proc/net/nf_conntrack"])) ?? "")")
        try s.net.client.run(["nft", "add table inet vxtrack; add chain inet vxtrack out { type filter hook output priority 0; ct state new counter; }"])
        cleanup.add("delete the control table") { _ = try? s.net.client.run(["nft", "delete", "table", "inet", "vxtrack"]) }
        try flows()
        #expect(try tracked() > 0, "the control: with a table that uses connection state the same flows are tracked")
    }
}
