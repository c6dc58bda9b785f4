import Foundation
import NetTestSupport
import Testing

/// What an admin relies on beyond the data path: a tunnel that appears after vpnd, a
/// profile cgroup re-created by someone else (systemd's Slice=), a daemon that holds only
/// CAP_NET_ADMIN, and `vpnctl teardown --remove-killswitch` / `vpnd --cleanup` lifting everything.
@Suite(.serialized) struct DaemonBehaviourTests {
    @Test func tunnelThatAppearsLaterIsPickedUp() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Scenario.profiles(["work"]))
        try s.tunnel.deleteClientInterface()
        let vpnd = try s.daemon.start()
        #expect(try s.daemon.status().profiles[0].tunnel.state == "missing")
        #expect(throws: CommandError.self, "no tunnel yet: the member cannot connect") { try s.member() }
        #expect(s.services.seen().isEmpty)

        try s.tunnel.bringClientUp()
        try eventually("vpnd to route into the new tunnel") { (try? s.member()) == s.tunnel.clientAddress4 }
        #expect(vpnd.isRunning)
        #expect(!s.services.seen().contains("tcp \(Topology.clientAddress4)"))
    }

    @Test func cgroupRecreatedOutsideVpndIsMatchedWithoutARebuild() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let (net, daemon) = (s.net, s.daemon)
        let root = try TestCgroups.cgroupRoot()
        let slice = "\(root)/\(daemon.cgroupParent)/vpn-work.slice"
        let handleBefore = try net.client.run(["nft", "-a", "list", "chain", "inet", "vpnexec", "inbound"])
        func inode() throws -> UInt64? {
            (try? FileManager.default.attributesOfItem(atPath: slice)[.systemFileNumber] as? NSNumber)?.uint64Value
        }
        let oldID = try #require(try inode())
        #expect(try NftCLI.cgroupKeys(in: net.client, set: "listen_level_2") == [oldID])
        // What systemd does when the last unit of a slice stops and the next one starts
        // (vpnd may re-create the directory first; either way the id is new).
        #expect(rmdir(slice) == 0)
        _ = mkdir(slice, 0o755)
        let service = slice + "/probe.service"
        #expect(mkdir(service, 0o755) == 0)
        let id = try #require(try inode())
        #expect(id != oldID)
        try eventually("the new cgroup id in the map") {
            try NftCLI.cgroupKeys(in: net.client, set: "listen_level_2") == [id]
        }
        // The rules themselves were not replaced: same handles.
        #expect(try net.client.run(["nft", "-a", "list", "chain", "inet", "vpnexec", "inbound"]) == handleBefore)
        let seen = try s.connect(through: s.net.client.enter + ["sh", "-c", "echo $$ > \(service)/cgroup.procs && exec \"$@\"", "sh"])
        #expect(seen == s.tunnel.clientAddress4, "a process placed in a unit below the profile's slice is a member")
    }

    /// `nft flush ruleset` by an admin (or a script) while vpnd runs: the killswitch is back
    /// within about a second, and the log says so.
    @Test func aDeletedTableIsPutBack() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        try s.net.client.run(["nft", "flush", "ruleset"])
        try eventually("vpnd to put the table back", seconds: 5) {
            try s.net.client.status(["nft", "list", "table", "inet", "vpnexec"]).status == 0
        }
        #expect(s.daemon.process?.output.contains("was deleted by someone else; put back") == true)
        #expect(try s.member() == s.tunnel.clientAddress4)
    }

    @Test func daemonKeepsOnlyTheCapabilitiesItNeeds() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let daemon = try DaemonHarness(topology: net, policy: "[profile.work]\ntunnel.interface = \"wg-none\"\n", cleanup: cleanup)
        let vpnd = try daemon.start()
        let status = try String(contentsOfFile: "/proc/\(vpnd.pid)/status", encoding: .utf8)
        func field(_ name: String) -> String? {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }?.split(separator: "\t").last.map(String.init)
        }
        // CAP_NET_ADMIN is bit 12; CAP_DAC_OVERRIDE (bit 1) is permitted, raised only to mkdir in the cgroup2 root.
        #expect(field("CapEff") == "0000000000001000")
        #expect(field("CapPrm") == "0000000000001002")
        #expect(field("CapBnd") == "0000000000001002")
        #expect(field("CapInh") == "0000000000000000")
        #expect(field("NoNewPrivs") == "1")
        // Root as it is, vpnd cannot write outside its places, execute, or use TCP; it
        // checked that by opening its own /proc/self/comm for writing (refused).
        let sandbox = try #require(try daemon.status().sandbox)
        #expect(sandbox.state == "confined" && sandbox.landlockABI != nil, "\(sandbox)")
        #expect(sandbox.writablePaths.starts(with: [try TestCgroups.cgroupRoot(), "/proc/sys/net", "/tmp/vx-\(net.tag)", "/var/run/wireguard"]), "\(sandbox)")
        #expect(sandbox.tcpConnectPorts == [53] || (sandbox.landlockABI ?? 0) < 4, "\(sandbox)")
        #expect(sandbox.description.contains("no program execution") && sandbox.description.hasSuffix("(verified)"), "\(sandbox)")

        // The helper that reads which program a process runs: CAP_SYS_PTRACE only (bit 19),
        // no_new_privs, a seccomp filter, and it is vpnd's child.
        let children = try String(contentsOfFile: "/proc/\(vpnd.pid)/task/\(vpnd.pid)/children", encoding: .utf8)
            .split(separator: " ").compactMap { Int32($0) }
        #expect(children.count == 1, "one helper: \(children)")
        if let helper = children.first {
            let helperStatus = try String(contentsOfFile: "/proc/\(helper)/status", encoding: .utf8)
            for line in ["CapEff:\t0000000000080000", "CapPrm:\t0000000000080000", "CapBnd:\t0000000000080000", "NoNewPrivs:\t1", "Seccomp:\t2"] {
                #expect(helperStatus.contains(line), "\(line) in \(helperStatus)")
            }
        }
    }

    @Test func oneDaemonPerNetworkNamespace() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let daemon = try DaemonHarness(topology: net, policy: "[profile.work]\ntunnel.interface = \"wg-none\"\n", cleanup: cleanup)
        let first = try daemon.start()
        var second = try daemon.arguments
        second[second.firstIndex(of: daemon.socketPath)!] = daemon.socketPath + ".second"
        let refused = try Command.status(second)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("another vpnd (pid \(first.pid)) manages this network namespace"))
        #expect(first.isRunning)
        // With its socket in another directory: the lock is the namespace's, not the socket's.
        let elsewhere = "/tmp/vx-elsewhere-\(uniqueTag())"
        cleanup.add("remove \(elsewhere)") { try? FileManager.default.removeItem(atPath: elsewhere) }
        var third = try daemon.arguments
        third[third.firstIndex(of: daemon.socketPath)!] = elsewhere + "/vpnd.sock"
        let refusedElsewhere = try Command.status(third)
        #expect(refusedElsewhere.status == 1 && refusedElsewhere.stderr.contains("another vpnd (pid \(first.pid)) manages this network namespace (lock /run/vpnexec/netns-"),
                "\(refusedElsewhere.stderr)")
        #expect(first.isRunning)
        // A socket path in a directory that does not exist: said in words, with what it is.
        var misplaced = try daemon.arguments
        let missing = "/nonexistent-\(uniqueTag())/run"
        misplaced[misplaced.firstIndex(of: daemon.socketPath)!] = missing + "/vpnd.sock"
        let lost = try Command.status(misplaced)
        #expect(lost.status == 1 && lost.stderr.hasSuffix("vpnd: cannot make the control socket's directory \(missing) (--socket): No such file or directory\n"), "\(lost.stderr)")
    }

    @Test func teardownAndCleanupRemoveEverything() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let daemon = try DaemonHarness(topology: net, policy: "[profile.work]\ntunnel.interface = \"wg-none\"\n", cleanup: cleanup)
        let vpnd = try daemon.start()
        let vpndPath = try Binaries.path("vpnd")
        // wg-none is missing: the profile is held, through the hold device.
        try eventually("the held route through the hold device") {
            try net.client.run(["ip", "-4", "route", "show", "table", "7301"]).contains("default dev vpnexec-hold")
        }
        // SIGTERM keeps the killswitch in the kernel, the hold device with it.
        vpnd.stop()
        #expect(try daemon.kernelState().contains("table inet vpnexec"))
        #expect(try net.client.run(["ip", "rule"]).contains("lookup 7301"))
        // Root's: a TUN with no owner may be attached to (and read) by any user.
        let hold = try net.client.run(["ip", "-d", "link", "show", "vpnexec-hold"])
        #expect(hold.contains("tun type tun") && hold.contains("persist on user root"), "\(hold)")
        #expect(try net.client.run(["ip", "-4", "route", "show", "table", "7301"]).contains("default dev vpnexec-hold"))

        let restarted = try daemon.start()
        // One word away from `down NAME`, or without the flag that names the loss: refused,
        // saying what it would do, and nothing changes.
        for words in [["down"], ["teardown"]] {
            let refused = try daemon.vpnctl(words)
            #expect(refused.status == 64 && refused.stderr.split(separator: "\n").count == 1
                    && refused.stderr.contains("--remove-killswitch"),
                    "\(words): \(refused.status) \(refused.stderr)")
        }
        #expect(restarted.isRunning)
        #expect(try daemon.kernelState().contains("table inet vpnexec"), "refused: nothing removed")
        let down = try daemon.vpnctl(["teardown", "--remove-killswitch"])
        #expect(down.status == 0, "\(down.stderr)")
        #expect(restarted.waitForExit(seconds: 5), "vpnd exits after teardown")
        #expect(try net.client.run(["nft", "list", "ruleset"]).isEmpty)
        #expect(!(try net.client.run(["ip", "rule"])).contains("7301"))
        #expect(try net.client.run(["ip", "-6", "route", "show", "table", "all", "proto", "118"]).isEmpty)
        #expect(try !net.client.run(["ip", "-o", "link"]).contains("vpnexec-hold"))

        _ = try daemon.start()
        try eventually("the hold device") { try net.client.run(["ip", "-o", "link"]).contains("vpnexec-hold") }
        daemon.process?.kill9()
        try net.client.run([vpndPath, "--cleanup"])
        #expect(try net.client.run(["nft", "list", "ruleset"]).isEmpty)
        #expect(try net.client.run(["ip", "-4", "route", "show", "table", "all", "proto", "118"]).isEmpty)
        #expect(try !net.client.run(["ip", "-o", "link"]).contains("vpnexec-hold"))
    }
}
