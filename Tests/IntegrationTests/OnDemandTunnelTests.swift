import Control
import Foundation
import NetTestSupport
import Testing

/// `on_demand`, `idle` and `vpnctl up/down` with vpnd's built-in tunnel against our
/// `vpn-server`: what leaves the client's physical interface, and when.
@Suite(.serialized) struct OnDemandTunnelTests {
    /// Silent until the first member (zero packets to the server, though the file asks for
    /// a keepalive every second); the member's first connection goes through the tunnel;
    /// idle teardown stops the keepalives; `vpnctl down` holds members (nothing direct, no
    /// handshake), `vpnctl up` lets them through; cleartext never leaves, whatever the phase.
    @Test func silentUntilNeededUpForTheFirstMemberDownWhenIdleAndHeldByVpnctl() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let services = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        _ = try OurTunnel(in: net.server, name: "vx\(net.tag)o", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51960
            Address = 10.83.0.1/24
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.83.0.2/32
            """)
        let interface = "vx\(net.tag)b"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let conf = URL(fileURLWithPath: daemon.policyDirectory + "/../work.conf").standardized.path
        FileManager.default.createFile(atPath: conf, contents: Data("""
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.83.0.2/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51960
            AllowedIPs = 0.0.0.0/0
            PersistentKeepalive = 1
            """.utf8), attributes: [.posixPermissions: 0o600])
        try daemon.writePolicy("""
            [profile.work]
            tunnel.wireguard = "\(conf)"
            tunnel.interface = "\(interface)"
            on_demand = true
            idle = "3s"
            [profile.other]
            tunnel.interface = "vx\(net.tag)x"
            """)
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        // Everything the client sends to the server (handshakes, data, keepalives, anything else),
        // with times; and members' cleartext (TCP 8080) beside a non-member's datagrams to
        // port 9002 all along, the positive control.
        let toServer = try Capture(on: net.clientUplink, in: net.client, filter: "dst host \(Topology.serverUplink4)", cleanup: cleanup)
        let cleartext = try Capture(on: net.clientUplink, in: net.client, filter: "tcp port 8080 or udp port 9002", cleanup: cleanup)
        let control = try BackgroundProcess(net.client.enter + ["python3", probe, "udp-loop", Topology.service4, "9002"], cleanup: cleanup)
        try daemon.start()
        func demand() throws -> TunnelDemandStatus? { try daemon.status().profiles.first { $0.name == "work" }?.tunnel.demand }
        func member() throws -> CommandResult { try Command.status(try daemon.vpnexec(profile: "work", ["python3", probe, "tcp", Topology.service4, "8080"])) }

        // Down on demand: the interface (and so the routes and killswitch) is there, nothing is sent.
        #expect(try demand()?.state == "down-on-demand" && demand()?.reason == "vpnd started; no member or packet yet")
        #expect(try demand()?.onDemand == true && demand()?.idleSeconds == 3)
        #expect(try net.client.status(["ip", "link", "show", interface]).status == 0, "the TUN interface exists while down")
        #expect(try daemon.vpnctl(["status"]).stdout.contains("demand    down (on demand) since"))
        Thread.sleep(forTimeInterval: 4)
        let quietEnd = Date().timeIntervalSince1970

        // The first member's first connection waits for the handshake and goes through.
        let first = try member()
        #expect(first.status == 0 && first.stdout.trimmed == "10.83.0.2", "the server saw \(first.stdout) \(first.stderr)")
        let up = try #require(try demand())
        #expect(up.state == "up" || up.state == "connecting", "\(up)")
        #expect(up.reason == "a member appeared", "vpnd saw the launch before its first packet: \(up)")
        try eventually("the tunnel to report up") { try demand()?.state == "up" }

        // No members, no traffic: down again after 3 s (members are seen within a second).
        try eventually("the idle teardown", seconds: 15) { try demand()?.state == "down-on-demand" }
        let idled = Date().timeIntervalSince1970
        #expect(try demand()?.reason == "idle: no members and no traffic")
        #expect(try daemon.vpnctl(["status"]).stdout.contains("demand    down (on demand) since"))
        Thread.sleep(forTimeInterval: 4)
        let silentEnd = Date().timeIntervalSince1970

        // vpnctl down: a member's connection is held (times out), no handshake goes out.
        let down = try daemon.vpnctl(["down", "work"])
        #expect(down.status == 0 && down.stdout.contains("held down"), "\(down.stdout) \(down.stderr)")
        #expect(try demand()?.state == "down-held" && demand()?.held == "down")
        let heldFrom = Date().timeIntervalSince1970
        let held = try member()
        #expect(held.status != 0 && held.stdout.trimmed.isEmpty, "held down, yet: \(held.stdout)")
        #expect(try demand()?.state == "down-held")
        let heldEnd = Date().timeIntervalSince1970

        // vpnctl up: up at once, and members get through.
        let upNow = try daemon.vpnctl(["up", "work"])
        #expect(upNow.status == 0 && upNow.stdout.contains("stays up"), "\(upNow.stdout) \(upNow.stderr)")
        #expect(try ["connecting", "up"].contains(demand()?.state) && demand()?.held == "up" && demand()?.reason == "vpnctl up")
        #expect(try member().stdout.trimmed == "10.83.0.2")
        Thread.sleep(forTimeInterval: 4)
        #expect(try demand()?.state == "up", "held up: no idle teardown")

        // vpnd does not own a tunnel.interface: up/down refused, saying why.
        let refused = try daemon.vpnctl(["up", "other"])
        #expect(refused.status != 0 && refused.stderr.contains("which vpnd does not own (tunnel.interface)"), "\(refused.stderr)")
        #expect(try daemon.vpnctl(["down", "nosuch"]).stderr.contains("unknown profile \"nosuch\""))

        // A non-member sees none of it.
        let outsiderFrom = Date().timeIntervalSince1970
        let outsider = try Command.run(net.client.enter + ["python3", probe, "tcp", Topology.service4, "8080"]).trimmed
        #expect(outsider == Topology.clientAddress4)
        control.stop()

        // What left, by phase (tcpdump's times, the same clock as ours).
        func timed(_ capture: Capture, _ filter: String = "") throws -> [(Double, String)] {
            _ = try capture.packets()
            return try Command.run(["tcpdump", "-r", capture.path, "-n", "-tt"] + (filter.isEmpty ? [] : [filter])).split(separator: "\n")
                .compactMap { line in Double(line.split(separator: " ").first ?? "").map { ($0, String(line)) } }
        }
        let sent = try timed(toServer)
        func during(_ from: Double, _ to: Double) -> [String] { sent.filter { $0.0 >= from && $0.0 <= to }.map(\.1) }
        #expect(during(0, quietEnd).isEmpty, "packets to the server before any member: \(during(0, quietEnd))")
        #expect(!during(quietEnd, idled).filter { $0.contains("length 148") }.isEmpty, "the positive control: the handshake initiation was seen")
        #expect(during(quietEnd, idled).count >= 3, "handshake, data and keepalives while up: \(during(quietEnd, idled))")
        // The teardown is seen up to a status poll late; half a second covers it.
        #expect(during(idled + 0.5, silentEnd).isEmpty, "keepalives after the idle teardown: \(during(idled + 0.5, silentEnd))")
        #expect(during(heldFrom, heldEnd).isEmpty, "packets to the server while held down: \(during(heldFrom, heldEnd))")
        #expect(!during(heldEnd, Date().timeIntervalSince1970).isEmpty, "vpnctl up reached the server")
        // Members' TCP in the clear: never, in any phase; the non-member's, at the end, and its
        // datagrams all along: seen (the positive controls).
        let tcp = try timed(cleartext, "tcp port 8080")
        let leaked = tcp.filter { $0.0 < outsiderFrom }.map(\.1)
        #expect(leaked.isEmpty, "member packets left in the clear: \(leaked.prefix(5))")
        #expect(tcp.contains { $0.0 >= outsiderFrom }, "the capture saw the non-member's connection")
        #expect(try timed(cleartext, "udp port 9002").count > 100, "the capture saw the non-member's datagrams")
        #expect(services.seen().contains("tcp 10.83.0.2"))
    }

    /// The universal trigger: a non-member's connection to a route.networks address brings
    /// the tunnel up and succeeds through it. Down, the tunnel's timer thread never wakes
    /// (up, it ticks ten times a second). A member that sends nothing starts the handshake
    /// too; a reload ends a vpnctl hold.
    @Test func aRoutedPacketOrAMemberBringsItUpAndDownCostsNoWakeups() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        _ = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        _ = try OurTunnel(in: net.server, name: "vx\(net.tag)o", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51961
            Address = 10.84.0.1/24
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.84.0.2/32
            """)
        let interface = "vx\(net.tag)b"
        let allowed = try TestUser("vxd\(net.tag)", cleanup: cleanup)
        let stranger = try TestUser("vxe\(net.tag)", cleanup: cleanup)
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        let conf = URL(fileURLWithPath: daemon.policyDirectory + "/../work.conf").standardized.path
        FileManager.default.createFile(atPath: conf, contents: Data("""
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.84.0.2/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51961
            AllowedIPs = 0.0.0.0/0
            """.utf8), attributes: [.posixPermissions: 0o600])
        try daemon.writePolicy("""
            [profile.work]
            tunnel.wireguard = "\(conf)"
            tunnel.interface = "\(interface)"
            on_demand = true
            route.networks = ["\(Topology.service4)"]
            users = ["\(allowed.name)"]
            """)
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
        let vpnd = try daemon.start()
        func demand() throws -> TunnelDemandStatus? { try daemon.status().profiles.first?.tunnel.demand }
        // Context switches of vpnd's threads other than the main one (which runs the event
        // loop, with its check once a second): the tunnel's loops and helpers, the exec guard.
        // (Threads cannot be told by name: the sandbox keeps vpnd from naming them; the
        // timer thread is told by its ticks once the tunnel is up.)
        func threadWakeups() throws -> [Int: Int] {
            let tasks = "/proc/\(vpnd.pid)/task"
            var counts: [Int: Int] = [:]
            for task in try FileManager.default.contentsOfDirectory(atPath: tasks) where task != String(vpnd.pid) {
                guard let status = try? String(contentsOfFile: "\(tasks)/\(task)/status", encoding: .utf8), let tid = Int(task) else { continue }
                counts[tid] = status.split(separator: "\n").filter { $0.contains("ctxt_switches") }
                    .compactMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }.reduce(0, +)
            }
            return counts
        }
        func delta(_ before: [Int: Int], _ after: [Int: Int]) -> [Int: Int] {
            Dictionary(uniqueKeysWithValues: after.map { ($0.key, $0.value - (before[$0.key] ?? 0)) })
        }
        #expect(try demand()?.state == "down-on-demand")
        // The interface's own start (links, addresses, MTU: the MTU watch hears them) settles first.
        Thread.sleep(forTimeInterval: 1)
        let downBefore = try threadWakeups()
        Thread.sleep(forTimeInterval: 3)
        let down = delta(downBefore, try threadWakeups())

        // A non-member's connection to a route.networks address: held for the handshake, then through.
        let routed = try Command.status(net.client.enter + ["python3", probe, "tcp", Topology.service4, "8080"])
        #expect(routed.stdout.trimmed == "10.84.0.2", "the server saw \(routed.stdout) \(routed.stderr.suffix(300)); vpnd: \(vpnd.output.suffix(1500))")
        #expect(try demand()?.reason == "a packet was routed into the tunnel (to \(Topology.service4))")
        try eventually("the tunnel to report up") { try demand()?.state == "up" }
        // The log names the destination as status does.
        #expect(vpnd.output.contains("built-in tunnel \(interface): connecting: a packet was routed into the tunnel (to \(Topology.service4))"),
                "\(vpnd.output.suffix(1500))")
        let upBefore = try threadWakeups()
        Thread.sleep(forTimeInterval: 3)
        let up = delta(upBefore, try threadWakeups())
        // Up, the timer thread ticks ten times a second: the busiest thread (30 wake-ups in
        // 3 s). Down, it does not tick: it wakes only for an event, such as the kernel's own
        // route changes on the fresh interface (its MTU watch hears routes): once or twice on a
        // quiet machine, a few more when other work delays the interface's start; a thread
        // that ticked would show 30.
        let timer = try #require(up.max { $0.value < $1.value })
        #expect(timer.value >= 20, "the positive control: up, the timer thread ticks (\(up))")
        #expect((down[timer.key] ?? 0) <= 5, "the timer thread woke \(down[timer.key] ?? -1) times in 3 s while the tunnel was down (all: \(down))")

        // vpnctl down by a user the profile allows (one it does not is refused), then a
        // reload: back to down on demand.
        let refused = try daemon.vpnctl(user: stranger.name, ["down", "work"])
        #expect(refused.status != 0 && refused.stderr.contains("may not use profile \"work\""), "\(refused.stderr)")
        #expect(try demand()?.state == "up")
        let byUser = try daemon.vpnctl(user: allowed.name, ["down", "work"])
        #expect(byUser.status == 0, "\(byUser.stderr)")
        #expect(try demand()?.state == "down-held")
        #expect(try daemon.vpnctl(["reload"]).status == 0)
        #expect(try demand()?.state == "down-on-demand" && demand()?.reason == "a reload ended the vpnctl hold" && demand()?.held == nil)

        // A member that sends nothing: the handshake starts anyway (before any first packet).
        let initiations = try Capture(on: net.clientUplink, in: net.client,
                                      filter: "udp and dst host \(Topology.serverUplink4) and dst port 51961 and udp[8] = 1", cleanup: cleanup)
        let quiet = try BackgroundProcess(try daemon.vpnexec(profile: "work", ["sleep", "30"]), cleanup: cleanup)
        try eventually("the member to bring the tunnel up") { try demand()?.state == "up" }
        #expect(try demand()?.reason == "a member appeared")
        quiet.stop()
        #expect(try initiations.count("") >= 1, "the handshake initiation left for the server")
    }
}
