import Foundation
import NetTestSupport
import Testing

/// The core path end to end: namespaces, wireguard-go as the tunnel, vpnd in the client
/// namespace, members started with vpnexec, and a server that reports who it saw.
@Suite(.serialized) struct CorePathTests {
    func policy(_ profiles: [(String, String)]) -> String {
        profiles.map { "[profile.\($0.0)]\ntunnel.interface = \"\($0.1)\"\n" }.joined(separator: "\n")
    }

    /// Proof 1: a member's connection arrives from the tunnel address, a non-member's
    /// from the physical one, over IPv4 and IPv6.
    @Test func memberUsesTheTunnelNonMemberDoesNot() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let tunnel = try net.addWireGuardTunnel(1)
        _ = try net.startServices()
        let daemon = try DaemonHarness(topology: net, policy: policy([("work", tunnel.clientInterface)]), cleanup: cleanup)
        try daemon.start()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        for (service, viaTunnel, direct) in [(Topology.service4, tunnel.clientAddress4, Topology.clientAddress4),
                                             (Topology.service6, tunnel.clientAddress6, Topology.clientAddress6)] {
            let member = try Command.run(try daemon.vpnexec(profile: "work", ["python3", probe, "tcp", service, "8080"])).trimmed
            #expect(member == viaTunnel, "member to \(service)")
            let other = try net.client.run(["python3", probe, "tcp", service, "8080"]).trimmed
            #expect(other == direct, "non-member to \(service)")
        }
        let work = try #require(try daemon.status().profiles.first)
        #expect(work.tunnel.state == "up")
        #expect(work.sent.packets > 0 && work.throughTunnel.packets > 0)
        #expect(work.droppedByKillswitch.packets == 0)
        let text = try daemon.vpnctl(["status"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("profile work:") && text.stdout.contains("\(tunnel.clientInterface): up"))
    }

    /// Proof 2: with the tunnel down, then deleted, nothing of the member leaves in the
    /// clear; non-members are unaffected; traffic resumes when the tunnel returns, with
    /// the same vpnd.
    @Test func tunnelDownOrDeletedLeaksNothingAndRecovers() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let tunnel = try net.addWireGuardTunnel(1)
        let services = try net.startServices()
        let daemon = try DaemonHarness(topology: net, policy: policy([("work", tunnel.clientInterface)]), cleanup: cleanup)
        let vpnd = try daemon.start()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        _ = try BackgroundProcess(try daemon.vpnexec(profile: "work", ["python3", probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
        let viaTunnel = "udp \(tunnel.clientAddress4)"
        try eventually("member datagrams through the tunnel") { services.count(viaTunnel) > 5 }
        let capture = try Capture(on: net.clientUplink, in: net.client, filter: "udp port 8080", cleanup: cleanup)

        try tunnel.setClientLink(up: false)
        let sentBefore = try daemon.status().profiles[0].sent.packets
        Thread.sleep(forTimeInterval: 1)
        #expect(try daemon.status().profiles[0].sent.packets > sentBefore + 20, "the member kept sending while the tunnel was down")
        #expect(try net.client.run(["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == Topology.clientAddress4)
        #expect(try daemon.status().profiles[0].tunnel.state == "down")

        try tunnel.deleteClientInterface()
        try eventually("vpnd to see the tunnel gone") { try daemon.status().profiles[0].tunnel.state == "missing" }
        Thread.sleep(forTimeInterval: 1)
        #expect(try net.client.run(["python3", probe, "tcp", Topology.service6, "8080"]).trimmed == Topology.clientAddress6)
        let leaked = try capture.stop()
        #expect(leaked.count == 0, "member packets left in the clear: \(leaked.prefix(5))")

        let seenBeforeReturn = services.count(viaTunnel)
        try tunnel.bringClientUp()
        try eventually("member traffic to resume through the re-created tunnel") { services.count(viaTunnel) > seenBeforeReturn + 5 }
        #expect(vpnd.isRunning)
        #expect(!services.seen().contains("udp \(Topology.clientAddress4)"), "no member datagram ever arrived from the physical address")
    }

    /// Proof 3: vpnd killed with SIGKILL while a member sends, then restarted 20 times
    /// under the same load: not one cleartext packet, and the member keeps being tunneled.
    @Test func killedAndRestartedDaemonNeverLeaks() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let tunnel = try net.addWireGuardTunnel(1)
        let services = try net.startServices()
        let daemon = try DaemonHarness(topology: net, policy: policy([("work", tunnel.clientInterface)]), cleanup: cleanup)
        let first = try daemon.start()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        _ = try BackgroundProcess(try daemon.vpnexec(profile: "work", ["python3", probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
        let viaTunnel = "udp \(tunnel.clientAddress4)"
        try eventually("member datagrams through the tunnel") { services.count(viaTunnel) > 5 }
        let capture = try Capture(on: net.clientUplink, in: net.client, filter: "udp port 8080", cleanup: cleanup)

        first.kill9()
        var seen = services.count(viaTunnel)
        try eventually("the kernel to keep tunneling without vpnd") { services.count(viaTunnel) > seen + 20 }
        for _ in 1...20 {
            let restarted = try daemon.start()
            restarted.kill9()
        }
        seen = services.count(viaTunnel)
        try eventually("tunneling to go on after the restarts") { services.count(viaTunnel) > seen + 20 }
        let leaked = try capture.stop()
        #expect(leaked.count == 0, "cleartext member packets: \(leaked.prefix(5))")
        #expect(!services.seen().contains("udp \(Topology.clientAddress4)"))
    }

    /// Proof 6: two profiles, two tunnels, two members; each arrives from its own tunnel.
    @Test func twoProfilesTwoTunnels() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let one = try net.addWireGuardTunnel(1)
        let two = try net.addWireGuardTunnel(2)
        _ = try net.startServices()
        let daemon = try DaemonHarness(topology: net, policy: policy([("work", one.clientInterface), ("home", two.clientInterface)]), cleanup: cleanup)
        try daemon.start()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        for (profile, tunnel) in [("work", one), ("home", two)] {
            #expect(try Command.run(try daemon.vpnexec(profile: profile, ["python3", probe, "tcp", Topology.service4, "8080"])).trimmed == tunnel.clientAddress4)
            #expect(try Command.run(try daemon.vpnexec(profile: profile, ["python3", probe, "tcp", Topology.service6, "8080"])).trimmed == tunnel.clientAddress6)
        }
        // Two members at once, each in its own profile.
        let a = try BackgroundProcess(try daemon.vpnexec(profile: "work", ["sh", "-c", "sleep 0.3; python3 \(probe) tcp \(Topology.service4) 8080"]), cleanup: cleanup)
        let b = try BackgroundProcess(try daemon.vpnexec(profile: "home", ["sh", "-c", "sleep 0.3; python3 \(probe) tcp \(Topology.service4) 8080"]), cleanup: cleanup)
        #expect(a.waitForExit(seconds: 10) && b.waitForExit(seconds: 10))
        #expect(a.output.trimmed == one.clientAddress4)
        #expect(b.output.trimmed == two.clientAddress4)
        let status = try daemon.status()
        #expect(Set(status.profiles.map(\.mark)).count == 2 && Set(status.profiles.map(\.table)).count == 2)
    }

    /// Proof 7: children (fork+exec, fork, threads) are members too; moving a running
    /// process affects its new connections only.
    @Test func childrenAreMembersAndMovesAffectNewConnections() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let tunnel = try net.addWireGuardTunnel(1)
        _ = try net.startServices()
        let daemon = try DaemonHarness(topology: net, policy: policy([("work", tunnel.clientInterface)]), cleanup: cleanup)
        try daemon.start()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let service = Topology.service4
        #expect(try Command.run(try daemon.vpnexec(profile: "work", ["sh", "-c", "python3 \(probe) tcp \(service) 8080"])).trimmed == tunnel.clientAddress4)
        #expect(try Command.run(try daemon.vpnexec(profile: "work", ["python3", probe, "tcp-fork", service, "8080"])).trimmed == tunnel.clientAddress4)
        #expect(try Command.run(try daemon.vpnexec(profile: "work", ["python3", probe, "tcp-thread", service, "8080"])).trimmed == tunnel.clientAddress4)

        let held = try InteractiveProcess(net.client.enter + ["python3", probe, "hold", service, "8080"], cleanup: cleanup)
        #expect(try held.readLine() == "A \(Topology.clientAddress4)")
        let moved = try daemon.vpnctl(["move", "--profile", "work", String(held.pid)])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout.contains("new ones use the tunnel"))
        #expect(try daemon.status().profiles[0].members == 1)
        try held.writeLine("go")
        #expect(try held.readLine() == "B \(tunnel.clientAddress4)", "a new connection after the move uses the tunnel")
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
        try process.run()
        cleanup.add("stop \(arguments.joined(separator: " "))") { [process] in
            if process.isRunning { process.terminate(); process.waitUntilExit() }
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
