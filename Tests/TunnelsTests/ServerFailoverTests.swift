import Addresses
import Monotonic
import Policy
import ServiceSupport
import Testing
import TrustedFiles
import TunnelFiles
import WireGuard
@testable import Tunnels

/// The server choice as the part runs it: each look hands it the engine's latest handshake
/// and unanswered initiations as values, on a clock the test steps.
@Suite struct ServerFailoverTests {
    static let policy = try! Policy.parse([PolicySource(path: "/p/10.toml", text: """
        [profile.work]
        tunnel = { wireguard = ["/etc/vpnexec/a.conf", "/etc/vpnexec/b.conf"], interface = "wg-work" }
        """)], resolver: SystemNameResolver())
    let server = PrivateKey.generate()
    let client = PrivateKey.generate()

    func text(_ endpoint: String) -> String {
        "[Interface]\nPrivateKey = \(client.base64)\n[Peer]\nPublicKey = \(server.publicKey.base64)\nEndpoint = \(endpoint)\nAllowedIPs = 0.0.0.0/0\n"
    }

    /// Two files, a's server first.
    func files() throws -> [String: TunnelFiles.Loaded] {
        let a = text("192.0.2.1:51820"), b = text("198.51.100.7:51820")
        let configA = try WgQuickConfig.parse(a, file: "/etc/vpnexec/a.conf"), configB = try WgQuickConfig.parse(b, file: "/etc/vpnexec/b.conf")
        let servers = TunnelFiles.Server.each(path: "/etc/vpnexec/a.conf", text: a, config: configA)
            + TunnelFiles.Server.each(path: "/etc/vpnexec/b.conf", text: b, config: configB)
        return ["wg-work": TunnelFiles.Loaded(profile: "work", interface: "wg-work", text: a, config: configA, servers: servers)]
    }

    static let quiet = Log(minimum: .error)

    @Test func theNextServerAfterThreeUnansweredInitiations() throws {
        let files = try files()
        let failover = ServerFailover(log: Self.quiet)
        var now = MonotonicInstant.seconds(100)
        #expect(failover.chosen(files, policy: Self.policy, looks: [:], now: now)["wg-work"]?.text == text("192.0.2.1:51820"))
        for failed in 0...2 as ClosedRange<UInt64> {
            now = now + .seconds(5)
            let chosen = failover.chosen(files, policy: Self.policy, looks: ["wg-work": .init(failed: failed)], now: now)
            #expect(chosen["wg-work"]?.text == text("192.0.2.1:51820"), "\(failed) unanswered")
            #expect(failover.status(interface: "wg-work")?.state == "trying")
        }
        now = now + .seconds(5)
        let chosen = failover.chosen(files, policy: Self.policy, looks: ["wg-work": .init(failed: 3)], now: now)
        #expect(chosen["wg-work"]?.text == text("198.51.100.7:51820"))
        let status = try #require(failover.status(interface: "wg-work"))
        #expect(status.current == "/etc/vpnexec/b.conf" && status.reason == "server 1 left 3 initiations unanswered")
        // b answers: up, and it stays (a failover list goes back to a only when idle).
        now = now + .seconds(1)
        _ = failover.chosen(files, policy: Self.policy, looks: ["wg-work": .init(lastHandshake: now)], now: now)
        #expect(failover.status(interface: "wg-work")?.state == "up")
        now = now + .seconds(60)
        #expect(failover.chosen(files, policy: Self.policy, looks: ["wg-work": .init(lastHandshake: now)], now: now)["wg-work"]?.text == text("198.51.100.7:51820"))
    }

    /// The count comes from a real engine whose server never answers: its initiations leave on
    /// WireGuard's schedule (every 5 s, here without its jitter of up to 333 ms, which made
    /// the time a draw), so the third one unanswered is seen at 15 s, on the next tick.
    @Test func anEngineWhoseServerNeverAnswersIsLeftAfterItsThirdUnansweredInitiation() throws {
        let files = try files()
        let failover = ServerFailover(log: Self.quiet)
        let engine = Engine(configuration: InterfaceConfiguration(privateKey: client, peers: [
            PeerConfiguration(publicKey: server.publicKey, endpoint: Endpoint(address: IPAddress("192.0.2.1")!, port: 51820), allowedIPs: [IPPrefix("0.0.0.0/0")!]),
        ]), random: NoJitter())
        let start = MonotonicInstant.seconds(100)
        var now = start, wall = WallClock(seconds: 1_000_000, nanoseconds: 0)
        _ = failover.chosen(files, policy: Self.policy, looks: [:], now: now)
        engine.keepalive(server.publicKey, now: now, wall: wall)
        var initiations = engine.drainOutput().count
        var switchedAt: MonotonicInstant.Duration?
        while switchedAt == nil, now.since(start) < .seconds(30) {
            now = now + .milliseconds(100)
            wall.nanoseconds += 100_000_000
            if wall.nanoseconds >= 1_000_000_000 { (wall.seconds, wall.nanoseconds) = (wall.seconds + 1, wall.nanoseconds - 1_000_000_000) }
            initiations += engine.tick(now: now, wall: wall).count
            let chosen = failover.chosen(files, policy: Self.policy, looks: ["wg-work": ServerFailover.Look(engine: engine, now: now)], now: now)
            if chosen["wg-work"]?.text == text("198.51.100.7:51820") { switchedAt = now.since(start) }
        }
        let after = try #require(switchedAt)
        #expect(after >= .seconds(15) && after <= .milliseconds(15_100), "\(after)")
        #expect(initiations == 4, "three unanswered, the fourth just sent")
    }
}

/// Zeros: no jitter in the engine's schedule (and fixed ephemeral keys, which a server that
/// never answers does not mind).
struct NoJitter: RandomSource {
    func fill(_ buffer: UnsafeMutableRawBufferPointer) { buffer.initializeMemory(as: UInt8.self, repeating: 0) }
}
