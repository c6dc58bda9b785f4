import Addresses
import Control
import Monotonic
import Policy
import Testing
import TrustedFiles
import WireGuard
@testable import Tunnels

/// The reconnection as the part reports it: a profile's `reconnect` becomes the engine's
/// schedule, and status reads the retries off an engine whose server never answers, on a
/// clock the test steps.
@Suite struct ReconnectTests {
    let server = PrivateKey.generate()
    let client = PrivateKey.generate()

    func engine(_ policy: ReconnectPolicy?) -> Engine {
        let engine = Engine(configuration: InterfaceConfiguration(privateKey: client, peers: [
            PeerConfiguration(publicKey: server.publicKey, endpoint: Endpoint(address: IPAddress("192.0.2.1")!, port: 51820), allowedIPs: [IPPrefix("0.0.0.0/0")!]),
        ]))
        engine.setReconnectPolicy(policy)
        return engine
    }

    @Test func aProfilesReconnectIsTheEnginesBackoff() throws {
        let policy = try Policy.parse([PolicySource(path: "/p/10.toml", text: """
            [profile.work]
            tunnel.wireguard = "/etc/vpnexec/work.conf"
            reconnect = { min = "5s", max = "20s" }
            [profile.home]
            tunnel.wireguard = "/etc/vpnexec/home.conf"
            """)], resolver: SystemNameResolver())
        let backoff = try #require(BuiltInTunnels.reconnectPolicy(policy.profiles[0].reconnect))
        #expect(backoff.minimum == .seconds(5) && backoff.maximum == .seconds(20) && !backoff.isProtocolDefault)
        #expect(BuiltInTunnels.reconnectPolicy(policy.profiles[1].reconnect) == nil)
    }

    /// 5, 10, 20, 20 s between initiations (each up to 1/15 later: the engine's jitter), and
    /// status counting them with the next one's wait.
    @Test func theBackoffDoublesUpToItsMaximumAsStatusShows() throws {
        let engine = engine(.backoff(minimum: .seconds(5), maximum: .seconds(20)))
        var now = MonotonicInstant.seconds(100), wall = WallClock(seconds: 1_000_000, nanoseconds: 0)
        engine.keepalive(server.publicKey, now: now, wall: wall)
        var sent = [now]
        _ = engine.drainOutput()
        while sent.count < 5 {
            now = now + .milliseconds(100)
            wall.seconds += 1  // status's times are monotonic: the wall clock may jump
            if !engine.tick(now: now, wall: wall).isEmpty { sent.append(now) }
        }
        let gaps = zip(sent.dropFirst(), sent).map { Double($0.since($1).nanoseconds) / 1e9 }
        for (gap, base) in zip(gaps, [5.0, 10, 20, 20]) {
            #expect(gap >= base && gap <= base * (1 + 1.0 / 15) + 0.1, "\(gaps)")
        }
        let report = BuiltInTunnels.reconnectReport(engine, now: now)
        #expect(report.schedule.kind == ReconnectScheduleStatus.backoff && report.schedule.minSeconds == 5 && report.schedule.maxSeconds == 20)
        let peer = try #require(report.peers.first)
        #expect(peer.attempts == 5 && peer.lastError == ReconnectPeerReport.noResponse)
        #expect(try #require(peer.nextTry) > 19.8 && peer.nextTry! <= 20 * (1 + 1.0 / 15))
    }

    /// A network that flaps every 100 ms for two minutes: the storm limit holds the
    /// initiations to its count a minute, and status says why the next one waits.
    @Test func networkChangesInALoopAreHeldByTheStormLimitAsStatusShows() throws {
        let engine = engine(.backoff(minimum: .seconds(5), maximum: .seconds(60)))
        var now = MonotonicInstant.seconds(100)
        let wall = WallClock(seconds: 1_000_000, nanoseconds: 0)
        var count = 0
        for _ in 1...1200 {
            now = now + .milliseconds(100)
            engine.networkChanged(now: now, wall: wall)
            count += engine.drainOutput().count + engine.tick(now: now, wall: wall).count
        }
        #expect(count >= ReconnectPolicy.backoffStormLimit && count <= 2 * ReconnectPolicy.backoffStormLimit, "\(count)")
        let report = BuiltInTunnels.reconnectReport(engine, now: now)
        #expect(report.schedule.stormLimitPerMinute == ReconnectPolicy.backoffStormLimit)
        #expect(report.peers.first?.lastError == ReconnectPeerReport.stormLimit)
    }
}
