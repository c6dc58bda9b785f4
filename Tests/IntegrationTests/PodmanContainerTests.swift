import Control
import Foundation
import NetTestSupport
import Testing

/// A real rootless container: `vpnexec -p work -- podman run ...` as an unprivileged user
/// (podman 4.3 from Debian, runc, `--cgroup-manager=cgroupfs`: on this hybrid-cgroup host the
/// container's processes, conmon and slirp4netns stay in the caller's cgroup2, the profile's).
/// The container's namespace has slirp4netns's tap0 alone, read by slirp4netns in the
/// client namespace, whose connections are the member's: the service sees the tunnel's
/// addresses, v4 and v6, the container's lookup through slirp4netns's resolver is answered by
/// the profile's proxy through the tunnel; with the tunnel down and then vpnd killed nothing
/// of it is on the physical link, while a non-member's datagrams are (the control). The image
/// is imported from a busybox root made here (no registry). Before vpnd's probe of another
/// user's process took EPERM for "alive", such a container was never found and stayed held.
/// Beside it the same user runs pasta on its own (`pasta --config-net -- CMD`), whose
/// namespace is its child's: the same holds for CMD, and status names pasta as its relay
/// (before RelayFinder read pasta's command and its process name, passt.avx2, it was not).
@Suite(.serialized) struct PodmanContainerTests {
    @Test func aRootlessPodmanContainerInAProfileGoesThroughItsTunnel() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let user = try TestUser("vxp\(uniqueTag())", cleanup: cleanup)
        let ranges = try String(contentsOfFile: "/etc/subuid", encoding: .utf8)
        try #require(ranges.split(separator: "\n").contains { $0.hasPrefix(user.name + ":") }, "useradd gave \(user.name) no /etc/subuid range: rootless podman needs one")
        let s = try Scenario(cleanup: cleanup, policy: { interfaces in
            "[profile.work]\ntunnel.interface = \"\(interfaces[0])\"\ndns = [\"10.99.1.1\"]\nusers = [\"\(user.name)\"]\n"
        })
        _ = try TunnelResolver(s, cleanup: cleanup)
        let base = "/tmp/vx-\(s.net.tag)-podman"
        let (home, runtime, root) = (base + "/home", base + "/run", base + "/root")
        cleanup.add("remove \(base)") { try? FileManager.default.removeItem(atPath: base) }
        for directory in [home, runtime] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Command.run(["chown", "\(user.name):\(user.name)", directory])
            chmod(directory, 0o700)
        }
        chmod(base, 0o755)
        try BusyboxImage.write(root: root, tar: base + "/image.tar")
        // /dev/net/tun is root's alone here (mode 0600, no udev to make it 0666 as Debian's
        // rules do): the user's slirp4netns opens a node of its own, bound over it in a mount
        // namespace of podman's alone.
        try Command.run(["mknod", "-m", "666", base + "/tun", "c", "10", "200"])
        func asUser(_ command: [String]) -> [String] {
            s.net.client.enter + ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount --bind \(base)/tun /dev/net/tun && exec \"$@\"", "sh"]
                + TestUser.become(user.name) + ["HOME=\(home)", "XDG_RUNTIME_DIR=\(runtime)", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"] + command
        }
        let podman = ["podman", "--cgroup-manager=cgroupfs", "--runtime=runc", "--events-backend=file"]
        func finished(_ command: [String]) throws -> (status: Int32, output: String) { try Self.finished(asUser(command), files: base) }
        // Registered before the first podman runs, so it runs after everything else of it: the
        // pause process keeps the user's namespaces (and userdel refuses a user with one).
        cleanup.add("stop podman's pause process") {
            _ = try? finished(podman + ["rm", "--force", "--all"])
            if let pid = Int32(((try? String(contentsOfFile: runtime + "/libpod/tmp/pause.pid", encoding: .utf8)) ?? "").trimmed) { kill(pid, SIGKILL) }
            Thread.sleep(forTimeInterval: 0.3)
            if let entry = getpwnam(user.name) { try? FileManager.default.removeItem(atPath: "/dev/shm/libpod_rootless_lock_\(entry.pointee.pw_uid)") }
        }
        let imported = try finished(podman + ["import", base + "/image.tar", "vxbusybox"])
        #expect(imported.status == 0, "podman import: \(imported.output)")
        let vpnexec = [try Binaries.path("vpnexec"), "--socket", s.daemon.socketPath, "-p", "work", "--"]
        let run = podman + ["run", "--detach", "--network", "slirp4netns:enable_ipv6=true", "localhost/vxbusybox"]

        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 8080 or udp port 9002 or port 53", cleanup: cleanup)
        let control = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)
        // The container connects to each family's service again and again (each connection
        // prints the address the service saw); its first packets wait until vpnd lets its
        // namespace out, and IPv6 until slirp4netns's router advertisement.
        let loop = "while :; do for target in \(Topology.service4) \(Topology.service6); do timeout 2 nc $target 8080 </dev/null; done; sleep 0.2; done"
        let container = try finished(vpnexec + run + ["sh", "-c", loop])
        #expect(container.status == 0, "podman run: \(container.output)")
        // pasta as a user runs it (podman 4.3 has no `--network pasta`): a namespace it makes
        // for its child, the command, with a tap named after the host's interface and the
        // host's addresses. The command sends UDP datagrams to each family's service all along
        // (only pasta's are UDP here), connects once to each (printing the address the service
        // saw; the first attempts wait until vpnd lets the namespace out) and looks a name up
        // through the resolver of the host's resolv.conf, which pasta forwards to.
        let probe = "python3 \(s.probe)"
        let senders = "\(probe) udp-loop \(Topology.service4) 8080 & \(probe) udp-loop \(Topology.service6) 8080 & "
            + "for target in \(Topology.service4) \(Topology.service6); do until \(probe) tcp $target 8080; do sleep 0.2; done; done; "
            + "busybox nslookup www.corp.example; wait"
        let pasta = try BackgroundProcess(asUser(vpnexec + ["pasta", "--config-net", "--", "sh", "-c", senders]), cleanup: cleanup)
        cleanup.add("kill pasta's command and its senders") { killTree(pasta.pid) }
        do {
            try eventually("the container's connections through the tunnel, v4 and v6", seconds: 30) {
                s.services.count("tcp \(s.tunnel.clientAddress4)") > 2 && s.services.count("tcp \(s.tunnel.clientAddress6)") > 2
            }
        } catch {
            let status = try? s.daemon.status()
            let vpnd = String(s.daemon.process?.output.suffix(2000) ?? "")
            let found = "relayed \(String(describing: status?.relayedNamespaces)), held \(String(describing: status?.heldNamespaces))"
            Issue.record("\(error): seen \(s.services.seen().suffix(4)); \(found); vpnd \(vpnd)")
            throw error
        }
        #expect(!s.services.seen().contains { $0.hasPrefix("tcp") && !$0.hasSuffix(s.tunnel.clientAddress4) && !$0.hasSuffix(s.tunnel.clientAddress6) },
                "\(s.services.seen())")
        try eventually("pasta's command to connect through it, v4 and v6, and look the name up", seconds: 15) {
            pasta.output.contains("192.0.2.82") || !pasta.isRunning
        }
        let connected = pasta.output.split(separator: "\n").map(String.init)
        #expect(connected.contains(s.tunnel.clientAddress4) && connected.contains(s.tunnel.clientAddress6) && pasta.output.contains("192.0.2.82"),
                "pasta's command: \(pasta.output.suffix(1500))")
        let datagrams = s.services.seen().filter { $0.hasPrefix("udp") }
        #expect(datagrams.count > 20 && datagrams.allSatisfy { $0 == "udp \(s.tunnel.clientAddress4)" || $0 == "udp \(s.tunnel.clientAddress6)" }
                && datagrams.contains("udp \(s.tunnel.clientAddress6)"), "pasta's datagrams: \(Set(datagrams))")
        let status = try s.daemon.status()
        let relayed = try #require(status.relayedNamespaces.first { $0.interfaces == ["tap0"] }, "\(status.relayedNamespaces) \(status.heldNamespaces)")
        // pasta's: named by its command line, its child's namespace, in the profile.
        let byPasta = try #require(status.relayedNamespaces.first { $0.relay?.program == "pasta" }, "\(status.relayedNamespaces)")
        #expect(byPasta.profile == "work" && byPasta.interfaces == [s.net.clientUplink] && byPasta.relay?.pid == pasta.pid
                && byPasta.relay?.match == RelayProcessReport.named && byPasta.relay?.profile == "work", "\(byPasta), pasta \(pasta.pid)")
        #expect(relayed.profile == "work" && relayed.interfaces == ["tap0"], "\(relayed)")
        // Its relay: podman's slirp4netns, whose namespace file only podman's mount namespace
        // has, named as the only relay it can be, in the profile.
        let slirp = try Command.run(["pgrep", "-u", user.name, "-x", "slirp4netns"]).split(separator: "\n").compactMap { Int32($0) }
        #expect(slirp.count == 1 && relayed.relay?.pid == slirp.first && relayed.relay?.match == RelayProcessReport.alone
                && relayed.relay?.profile == "work", "\(String(describing: relayed.relay)), slirp4netns \(slirp)")

        // A lookup in it (podman exec) through slirp4netns's resolver (10.0.2.3) is the
        // profile's, answered by the tunnel's resolver.
        let id = String(container.output.split(separator: "\n").last ?? "")
        let lookup = try finished(vpnexec + podman + ["exec", id, "nslookup", "www.corp.example", "10.0.2.3"])
        #expect(lookup.output.contains("192.0.2.82"), "the container's lookup: \(lookup.output)")

        // Tunnel down, then vpnd killed: nothing of the container on the physical link.
        try s.tunnel.setClientLink(up: false)
        Thread.sleep(forTimeInterval: 2)
        s.daemon.process?.kill9()
        Thread.sleep(forTimeInterval: 2)
        control.stop()
        let clear = try capture.packets("port 8080 or (port 53 and not src host fd7f:4d::1)")
        #expect(clear.isEmpty, "the container's packets in the clear: \(clear.count): \(clear.prefix(3))")
        #expect(try capture.count("udp port 9002") > 20, "the capture sees the non-member's datagrams")
    }

    /// Rootful podman on its default network (CNI's bridge cni-podman0, made in the client
    /// namespace), started through vpnexec. Rootful podman moves a container to a cgroup of
    /// its own (/libpod_parent/libpod-ID, out of the caller's), so it is given one below the
    /// profile's as its `--cgroup-parent` (with cgroupfs, podman refuses a parent named
    /// `*.slice`: "systemd slice received as cgroup parent when using cgroupfs"); and root here lacks CAP_SYS_RESOURCE, so the container's
    /// rlimits are set below the hard ones (runc failed with EPERM raising them). Its veth is a
    /// port of the bridge: routed, the service sees the tunnel's address; tunnel down, nothing
    /// in the clear.
    @Test func aRootfulPodmanContainerOnItsBridgeIsRouted() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let base = "/tmp/vx-\(s.net.tag)-podman"
        cleanup.add("remove \(base)") { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        try BusyboxImage.write(root: base + "/root", tar: base + "/image.tar")
        let status = try s.daemon.status()
        let profileCgroup = try #require(status.profiles.first?.cgroup)
        let podman = s.net.client.enter + ["podman", "--root", base + "/storage", "--runroot", base + "/run", "--tmpdir", base + "/tmp",
                                           "--network-config-dir", base + "/net", "--cgroup-manager=cgroupfs", "--runtime=runc", "--events-backend=file"]
        // What rootful podman keeps outside its directories: CNI's address leases and its lock
        // file, removed unless they were there before.
        for path in ["/var/lib/cni", "/var/lib/cni/networks/podman", "/dev/shm/libpod_lock"] where !FileManager.default.fileExists(atPath: path) {
            cleanup.add("remove \(path)") { try? FileManager.default.removeItem(atPath: path) }
        }
        cleanup.add("remove podman's containers and its cgroups of the v1 hierarchies") {
            _ = try? Self.finished(podman + ["rm", "--force", "--all"], files: base)
            let top = String(profileCgroup.split(separator: "/").first ?? "")
            for hierarchy in (try? FileManager.default.contentsOfDirectory(atPath: "/sys/fs/cgroup")) ?? [] where hierarchy != "unified" && !top.isEmpty {
                _ = try? Command.status(["find", "/sys/fs/cgroup/\(hierarchy)/\(top)", "-depth", "-type", "d", "-exec", "rmdir", "{}", ";"])
            }
        }
        let imported = try Self.finished(podman + ["import", base + "/image.tar", "vxbusybox"], files: base)
        #expect(imported.status == 0, "podman import: \(imported.output)")
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 8080 or udp port 9002", cleanup: cleanup)
        let control = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)
        let loop = "while :; do timeout 2 nc \(Topology.service4) 8080 </dev/null; sleep 0.2; done"
        let container = try Self.finished(try s.daemon.vpnexec(profile: "work", Array(podman.dropFirst(s.net.client.enter.count)) + [
            "run", "--detach", "--network", "bridge", "--cgroup-parent", "/\(profileCgroup)/containers",
            "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", "localhost/vxbusybox", "sh", "-c", loop,
        ]), files: base)
        #expect(container.status == 0, "podman run: \(container.output)")
        do {
            try eventually("the container's connections through the tunnel", seconds: 20) { s.services.count("tcp \(s.tunnel.clientAddress4)") > 2 }
        } catch {
            let status = try? s.daemon.status()
            Issue.record("\(error): seen \(s.services.seen().suffix(4)); routed \(String(describing: status?.routedNamespaces)), held \(String(describing: status?.heldNamespaces)); \(container.output)")
            throw error
        }
        #expect(!s.services.seen().contains { $0.hasPrefix("tcp") && $0 != "tcp \(s.tunnel.clientAddress4)" }, "\(s.services.seen())")
        let routed = try #require(try s.daemon.status().routedNamespaces.first)
        #expect(routed.profile == "work" && routed.bridges == ["cni-podman0"], "\(routed)")
        try s.tunnel.setClientLink(up: false)
        Thread.sleep(forTimeInterval: 2)
        control.stop()
        #expect(try capture.packets("port 8080").isEmpty, "the container's connections in the clear")
        #expect(try capture.count("udp port 9002") > 20, "the capture sees the non-member's datagrams")
    }

    /// Runs `command` detached (setsid -f), its output and status to files in `files`: podman
    /// leaves processes behind (its pause process, conmon) holding whatever it was given;
    /// and started by Foundation's Process, a podman and a setsid that exited at once stayed
    /// zombies it never saw exit (its waitUntilExit never returned), so setsid is spawned
    /// and waited for here.
    static func finished(_ command: [String], files: String) throws -> (status: Int32, output: String) {
        let name = files + "/podman-\(uniqueTag())"
        try spawnAndWait(["/usr/bin/setsid", "-f", "/bin/sh", "-c", "exec >\(name).log 2>&1 </dev/null; \"$@\"; echo $? >\(name).status", "sh"] + command)
        var status: Int32?
        try eventually("\(command.joined(separator: " ")) to finish", seconds: 30) {
            status = (try? String(contentsOfFile: name + ".status", encoding: .utf8)).flatMap { Int32($0.trimmed) }
            return status != nil
        }
        return (status ?? -1, (try? String(contentsOfFile: name + ".log", encoding: .utf8)) ?? "")
    }
}

/// SIGKILLs `pid`'s descendants, then `pid`: pasta's command and what it started outlive
/// pasta, in a user namespace of the test user's that userdel would refuse.
private func killTree(_ pid: Int32) {
    var tree: [Int32] = [], next = [pid]
    while let parent = next.popLast() {
        tree.append(parent)
        let children = (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
        next += children.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
    }
    for process in tree.reversed() { kill(process, SIGKILL) }
}

/// posix_spawn and waitpid, without Foundation's Process.
private func spawnAndWait(_ arguments: [String]) throws {
    var pid: pid_t = 0
    var argv = arguments.map { strdup($0) }
    argv.append(nil)
    defer { argv.forEach { free($0) } }
    let spawned = posix_spawn(&pid, arguments[0], nil, nil, argv, environ)
    guard spawned == 0 else { throw TestEnvironmentError("posix_spawn \(arguments[0]): error \(spawned)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
}
