import Foundation
import NetTestSupport
import Testing

/// The profile's DNS endpoint is vpnd's alone. A non-member listens, TCP, on every port of
/// this host a member's TCP query could be sent to: port 53 of every address (the
/// namespace lets any user bind it, `ip_unprivileged_port_start=0`, as hosts set up for
/// rootless containers do) and the ports vpnd once rewrote members' TCP queries to
/// (127.0.0.1:5301, [::1]:5301); it relays what it gets to a server across the physical
/// link, as a local user reading or steering members' names would. A member's TCP
/// queries are answered by its profile's proxy through the tunnel while vpnd runs; with
/// vpnd killed and after `vpnd --oneshot` (the boot-time killswitch) they are refused at
/// once; with vpnd started while the relay holds its ports, answered by the proxy. None
/// ever reaches the relay: not one port-53 packet leaves on the physical link until a
/// non-member asks the relay (the control).
@Suite(.serialized) struct DNSSquatterTests {
    @Test func noLocalUserAnswersAMembersTCPQueries() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: { DNSTests.policy($0) })
        _ = try TunnelResolver(s, cleanup: cleanup)
        try s.net.client.run(["sysctl", "-qw", "net.ipv4.ip_unprivileged_port_start=0"])
        let relayUser = try TestUser("vxsq\(uniqueTag().suffix(8))", cleanup: cleanup)
        var relays: [BackgroundProcess] = []
        /// Relays as the non-member, each up and holding its address (socat's own, not
        /// anyone else's: one that could not bind would exit).
        func relay(_ listens: [(String, String)]) throws {
            for (listen, _) in listens {
                relays.append(try BackgroundProcess(s.daemon.asUser(relayUser.name) + ["socat", listen, "TCP4:\(Topology.service4):53,connect-timeout=2"], cleanup: cleanup))
            }
            try eventually("the relay to listen on \(listens.map(\.1))") {
                let listening = try s.net.client.run(["ss", "-ltnpH"]).split(separator: "\n")
                return relays.allSatisfy(\.isRunning) && listens.allSatisfy { address in listening.contains { $0.contains(" \(address.1) ") && $0.contains("socat") } }
            }
        }
        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)
        let dnsq = try PythonScript.write("dnsq.py", cleanup: cleanup)
        let procs = try TestCgroups.cgroupRoot() + "/" + s.daemon.cgroupParent + "/vpn-work.slice/cgroup.procs"
        let servers = ["192.0.2.53", "127.0.0.53", "2001:db8::53", "::1"]
        /// A member's TCP query (placed by hand, as without vpnd nothing else places it), and
        /// how long it took.
        func ask(_ server: String) throws -> (result: CommandResult, seconds: Double) {
            let started = Date()
            let result = try Command.status(s.net.client.enter + ["sh", "-c", "echo $$ > \(procs) && exec python3 \(dnsq) tcp \(server) www.corp.example"])
            return (result, Date().timeIntervalSince(started))
        }
        func answeredByTheProxy(_ phase: String) throws {
            for server in servers {
                let (result, _) = try ask(server)
                #expect(result.stdout.trimmed == "192.0.2.82", "\(phase), to \(server): \(result.stdout)\(result.stderr)")
            }
        }
        func refusedAtOnce(_ phase: String) throws {
            for server in servers {
                let (result, seconds) = try ask(server)
                #expect(result.status != 0 && result.stderr.contains("Connection refused"), "\(phase), to \(server): \(result.stdout)\(result.stderr)")
                #expect(seconds < 2, "\(phase), to \(server): refused at once, not after a timeout (\(seconds) s)")
            }
        }

        try relay([("TCP4-LISTEN:53,reuseaddr,fork", "0.0.0.0:53"), ("TCP6-LISTEN:53,ipv6only=1,reuseaddr,fork", "[::]:53")])
        try answeredByTheProxy("vpnd running")
        s.daemon.process?.kill9()
        // The ports vpnd's proxies once had, free while vpnd is gone.
        try relay([("TCP4-LISTEN:5301,bind=127.0.0.1,reuseaddr,fork", "127.0.0.1:5301"), ("TCP6-LISTEN:5301,bind=[::1],reuseaddr,fork", "[::1]:5301")])
        try refusedAtOnce("vpnd killed")
        // vpnd starts while the relay holds port 53 of every address: nothing of vpnd's is
        // in its way (its listeners' ports are its own), and its proxy answers again.
        _ = try s.daemon.start()
        try answeredByTheProxy("vpnd started beside the relay")
        s.daemon.process?.kill9()
        let oneshot = try Command.status(try s.daemon.arguments + ["--oneshot"])
        #expect(oneshot.status == 0, "\(oneshot.stderr)")
        try refusedAtOnce("after vpnd --oneshot")

        #expect(try capture.packets("port 53").isEmpty, "members' queries relayed across the physical link")
        // The control: the relay takes a non-member's query, and a capture like the one
        // above sees what it relays.
        let control = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)
        _ = try Command.status(s.net.client.enter + ["python3", dnsq, "tcp", "127.0.0.1", "www.corp.example"])
        #expect(try control.count("tcp dst port 53") >= 1, "the relay's connection on the physical link: \(relays.map(\.output))")
    }
}
