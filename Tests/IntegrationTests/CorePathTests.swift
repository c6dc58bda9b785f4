import Foundation
import NetTestSupport
import Testing

/// The core path end to end: namespaces, wireguard-go as the tunnel, vpnd in the client
/// namespace, members started with vpnexec, and a server that reports who it saw.
@Suite(.serialized) struct CorePathTests {
    /// Proof 1: a member's connection arrives from the tunnel address, a non-member's
    /// from the physical one, over IPv4 and IPv6.
    @Test func memberUsesTheTunnelNonMemberDoesNot() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        for (service, viaTunnel, direct) in [(Topology.service4, s.tunnel.clientAddress4, Topology.clientAddress4),
                                             (Topology.service6, s.tunnel.clientAddress6, Topology.clientAddress6)] {
            #expect(try s.member(to: service) == viaTunnel, "member to \(service)")
            #expect(try s.connect(to: service) == direct, "non-member to \(service)")
        }
        let work = try #require(try s.daemon.status().profiles.first)
        #expect(work.tunnel.state == "up")
        #expect(work.sent.packets > 0 && work.throughTunnel.packets > 0)
        #expect(work.droppedByKillswitch.packets == 0)
        let text = try s.daemon.vpnctl(["status"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("profile work:") && text.stdout.contains("\(s.tunnel.clientInterface): up"))
    }

    /// Proof 2: with the tunnel down, then deleted, nothing of the member leaves in the
    /// clear; non-members are unaffected; traffic resumes when the tunnel returns, with
    /// the same vpnd.
    @Test func tunnelDownOrDeletedLeaksNothingAndRecovers() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let vpnd = try #require(s.daemon.process)
        _ = try s.sendingMember()
        let capture = try s.captureCleartext()

        try s.tunnel.setClientLink(up: false)
        Thread.sleep(forTimeInterval: 1)
        // The member's sockets are born with the profile's mark: with the tunnel down its
        // table sends them into the hold device, whose chain refuses them at once (the sender
        // above goes on trying; the capture below counts what left) and counts them.
        #expect(throws: CommandError.self, "a member's datagram socket cannot even connect") { try s.member(mode: "udp-name") }
        let refused = try Command.status(s.daemon.vpnexec(profile: "work", ["python3", s.probe, "tcp", Topology.service4, "8080"]))
        #expect(refused.status != 0 && refused.stderr.contains("[Errno 113] No route to host"), "a member's TCP connect: \(refused.stderr)")
        #expect(try s.connect() == Topology.clientAddress4)
        #expect(try s.daemon.status().profiles[0].tunnel.state == "down")
        let heldBefore = try s.daemon.status().profiles[0].droppedByKillswitch.packets
        Thread.sleep(forTimeInterval: 0.5)
        let held = try s.daemon.status().profiles[0].droppedByKillswitch.packets
        #expect(heldBefore > 0 && held >= heldBefore + 20, "what the route holds is counted: \(heldBefore) then \(held) (a datagram every 10 ms)")
        // The kernel's route for a member now is the hold device: explain says it is held.
        let explained = try s.daemon.vpnctl(["explain", "-p", "work"]).stdout
        #expect(explained.contains("no route to 192.0.2.1 (the killswitch holds it)") && !explained.contains("vpnexec-hold"), "\(explained)")
        let down = try s.daemon.vpnctl(["status"]).stdout
        #expect(down.contains("  held      the tunnel is down: members' connections fail (\"No route to host\") and their datagrams are refused; nothing leaves\n"), "\(down)")

        try s.tunnel.deleteClientInterface()
        try eventually("vpnd to see the tunnel gone") { try s.daemon.status().profiles[0].tunnel.state == "missing" }
        #expect(try s.daemon.vpnctl(["status"]).stdout.contains("  held      the tunnel is missing: members' connections fail (\"No route to host\") and their datagrams are refused"))
        Thread.sleep(forTimeInterval: 1)
        #expect(try s.connect(to: Topology.service6) == Topology.clientAddress6)
        let (leaked, control) = try capture.stop()
        #expect(leaked.count == 0, "member packets left in the clear: \(leaked.prefix(5))")
        #expect(control > 20, "the capture saw the non-member's datagrams")

        let viaTunnel = "udp \(s.tunnel.clientAddress4)"
        let seenBeforeReturn = s.services.count(viaTunnel)
        try s.tunnel.bringClientUp()
        try eventually("member traffic to resume through the re-created tunnel") { s.services.count(viaTunnel) > seenBeforeReturn + 5 }
        #expect(vpnd.isRunning)
        #expect(!s.services.seen().contains("udp \(Topology.clientAddress4)"), "no member datagram ever arrived from the physical address")
    }

    /// Proof 3: vpnd killed with SIGKILL while a member sends, then restarted 20 times
    /// under the same load: not one cleartext packet, and the member keeps being tunneled.
    @Test func killedAndRestartedDaemonNeverLeaks() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        _ = try s.sendingMember()
        let capture = try s.captureCleartext()
        let viaTunnel = "udp \(s.tunnel.clientAddress4)"

        s.daemon.process?.kill9()
        var seen = s.services.count(viaTunnel)
        try eventually("the kernel to keep tunneling without vpnd") { s.services.count(viaTunnel) > seen + 20 }
        for _ in 1...20 {
            try s.daemon.start().kill9()
        }
        seen = s.services.count(viaTunnel)
        try eventually("tunneling to go on after the restarts") { s.services.count(viaTunnel) > seen + 20 }
        let (leaked, control) = try capture.stop()
        #expect(leaked.count == 0, "cleartext member packets: \(leaked.prefix(5))")
        #expect(control > 20, "the capture saw the non-member's datagrams")
        #expect(!s.services.seen().contains("udp \(Topology.clientAddress4)"))
    }

    /// A tunnel's own address never leaves by another interface, whoever sends it: here a
    /// process in no profile, its socket bound to the tunnel's address and to the physical
    /// interface (the killswitch's postrouting chain, not routing, must catch it: a socket
    /// bound to a device gets a route even where the table has none). With the tunnel's two
    /// addresses the chain compares each; with more than four it looks them up; both drop.
    @Test func aTunnelsAddressNeverLeavesByAnotherInterface() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let tunnel = s.tunnel
        try eventually("vpnd to compare the tunnel's addresses") { try chain("unmarked", of: s).contains("ip saddr \(tunnel.clientAddress4)") }
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "udp port 8080 or udp port 9002", cleanup: cleanup)
        // Each source sends three datagrams to port 8080 through the physical interface;
        // the physical address sends to port 9002, the control that must arrive.
        func send(from sources: [String]) throws {
            let script = """
            import socket, sys
            for source, port in [(a, 8080) for a in sys.argv[2:]] + [(sys.argv[1], 9002)]:
                family = socket.AF_INET6 if ":" in source else socket.AF_INET
                target = "\(Topology.service6)" if ":" in source else "\(Topology.service4)"
                s = socket.socket(family, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"\(s.net.clientUplink)")
                s.bind((source, 0))
                for _ in range(3):
                    try: s.sendto(b"x", (target, port))
                    except OSError as e: print(source, e)
            """
            _ = try Command.run(s.net.client.enter + ["python3", "-c", script, Topology.clientAddress4] + sources)
        }
        let dropped = try s.daemon.status().profiles[0].droppedByKillswitch.packets
        try send(from: [tunnel.clientAddress4, tunnel.clientAddress6])
        // More addresses on the tunnel: the chain looks them up in the maps instead.
        let more = (50...52).map { "10.99.1.\($0)" }
        for address in more { try s.net.client.run(["ip", "addr", "add", "\(address)/32", "dev", tunnel.clientInterface]) }
        try eventually("vpnd to look the five addresses up") { try chain("unmarked", of: s).contains("ip saddr vmap @tunnel_sources4") }
        try send(from: more + [tunnel.clientAddress6])
        let leaked = try capture.packets("udp port 8080")
        #expect(leaked.isEmpty, "a tunnel's address left by the physical interface: \(leaked.prefix(5))")
        #expect(try capture.count("udp port 9002") == 6, "the capture saw the physical address's datagrams")
        #expect(try s.daemon.status().profiles[0].droppedByKillswitch.packets >= dropped + 18, "counted as the profile's killswitch drops")
    }

    func chain(_ name: String, of s: Scenario) throws -> String {
        try s.net.client.run(["nft", "list", "chain", "inet", "vpnexec", name])
    }

    /// Proof 6: two profiles, two tunnels, two members; each arrives from its own tunnel.
    @Test func twoProfilesTwoTunnels() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, tunnels: 2, policy: Scenario.profiles(["work", "home"]))
        let (one, two) = (s.tunnels[0], s.tunnels[1])
        for (profile, tunnel) in [("work", one), ("home", two)] {
            #expect(try s.member(profile) == tunnel.clientAddress4)
            #expect(try s.member(profile, to: Topology.service6) == tunnel.clientAddress6)
        }
        // Two members at once, each in its own profile.
        let delayed = ["sh", "-c", "sleep 0.3; python3 \(s.probe) tcp \(Topology.service4) 8080"]
        let a = try BackgroundProcess(try s.daemon.vpnexec(profile: "work", delayed), cleanup: cleanup)
        let b = try BackgroundProcess(try s.daemon.vpnexec(profile: "home", delayed), cleanup: cleanup)
        #expect(a.waitForExit(seconds: 10) && b.waitForExit(seconds: 10))
        #expect(a.output.trimmed == one.clientAddress4)
        #expect(b.output.trimmed == two.clientAddress4)
        let status = try s.daemon.status()
        #expect(Set(status.profiles.map(\.mark)).count == 2 && Set(status.profiles.map(\.table)).count == 2)
    }

    /// Proof 7: children (fork+exec, fork, threads) are members too; moving a running
    /// process affects its new connections only.
    @Test func childrenAreMembersAndMovesAffectNewConnections() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
        let viaShell = try Command.run(try s.daemon.vpnexec(profile: "work", ["sh", "-c", "python3 \(s.probe) tcp \(Topology.service4) 8080"])).trimmed
        #expect(viaShell == s.tunnel.clientAddress4)
        #expect(try s.member(mode: "tcp-fork") == s.tunnel.clientAddress4)
        #expect(try s.member(mode: "tcp-thread") == s.tunnel.clientAddress4)

        let held = try InteractiveProcess(s.net.client.enter + ["python3", s.probe, "hold", Topology.service4, "8080"], cleanup: cleanup)
        #expect(try held.readLine() == "A \(Topology.clientAddress4)")
        let moved = try s.daemon.vpnctl(["move", "--profile", "work", String(held.pid)])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout.contains("new ones use the tunnel"))
        #expect(try s.daemon.status().profiles[0].members == 1)
        try held.writeLine("go")
        #expect(try held.readLine() == "B \(s.tunnel.clientAddress4)", "a new connection after the move uses the tunnel")
        #expect(try held.readLine() == "A-again \(Topology.clientAddress4)", "the connection made before the move keeps its route")
    }
}

/// A process with a pipe to its stdin and from its stdout.
final class InteractiveProcess: @unchecked Sendable {
    let process = Process()
    private let input = Pipe(), output = Pipe()
    private var buffer = Data()
    var pid: Int32 { process.processIdentifier }

    init(_ arguments: [String], cleanup: Cleanup) throws {
        process.executableURL = URL(fileURLWithPath: try Command.resolve(arguments[0]))
        process.arguments = Array(arguments.dropFirst())
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try BackgroundProcess.withNoSignalsBlocked { try process.run() }
        cleanup.add("stop \(arguments.joined(separator: " "))") { [process] in
            if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        }
    }

    func readLine() throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer = Data(buffer[buffer.index(after: newline)...])
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw TestEnvironmentError("process ended before a line; got \(String(decoding: buffer, as: UTF8.self))") }
            buffer += chunk
        }
    }

    func writeLine(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }
}
