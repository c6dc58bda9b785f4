import Foundation
import Monotonic
import Testing
import TunnelFiles
import Tunnels
import WireGuard

/// A file whose [Peer] lists several Endpoints is several servers of one key; the choice
/// works across them as across files.
@Suite struct ServerEndpointsTests {
    let text = """
        [Interface]
        PrivateKey = \(PrivateKey.generate().base64)
        [Peer]
        PublicKey = \(PrivateKey.generate().publicKey.base64)
        Endpoint = 192.0.2.1:51820
        Endpoint = 198.51.100.7:443
        AllowedIPs = 0.0.0.0/0
        """

    @Test func eachEndpointIsAServerOfTheSameFile() throws {
        let config = try WgQuickConfig.parse(text, file: "/etc/vpnexec/p.conf")
        let servers = TunnelFiles.Server.each(path: "/etc/vpnexec/p.conf", text: text, config: config)
        #expect(servers.map(\.name) == ["/etc/vpnexec/p.conf (Endpoint 192.0.2.1:51820)", "/etc/vpnexec/p.conf (Endpoint 198.51.100.7:443)"])
        #expect(servers.map { $0.config.peers[0].endpoints.map(\.description) } == [["192.0.2.1:51820"], ["198.51.100.7:443"]])
        #expect(servers.map { $0.config.peers[0].endpoint?.description } == ["192.0.2.1:51820", "198.51.100.7:443"])
        #expect(Set(servers.map(\.text)).count == 1, "one file: switching between them starts no new tunnel")
        #expect(servers.map(\.endpointIndex) == [0, 1])
    }

    @Test func aFileWithOneEndpointIsOneServerNamedByItsPath() throws {
        let one = text.replacingOccurrences(of: "Endpoint = 198.51.100.7:443\n", with: "")
        let servers = TunnelFiles.Server.each(path: "/etc/vpnexec/p.conf", text: one, config: try WgQuickConfig.parse(one, file: "p"))
        #expect(servers.map(\.name) == ["/etc/vpnexec/p.conf"] && servers[0].endpointIndex == nil)
    }

    /// failover across a dead first endpoint: after `failover_after` unanswered initiations
    /// the second endpoint (server 2), and the reason says which.
    @Test func failoverMovesToTheSecondEndpoint() throws {
        let config = try WgQuickConfig.parse(text, file: "p")
        let servers = TunnelFiles.Server.each(path: "/etc/vpnexec/p.conf", text: text, config: config)
        var choice = ServerChoice(mode: .failover, count: servers.count, failoverAfter: 2)
        #expect(choice.step(now: .seconds(0), lastHandshake: nil) == .probe)
        #expect(choice.step(now: .seconds(1), lastHandshake: nil, failed: 0) == .none)
        #expect(choice.step(now: .seconds(11), lastHandshake: nil, failed: 2) == .use(1))
        #expect(servers[choice.current].config.peers[0].endpoint?.description == "198.51.100.7:443")
        #expect(choice.reason == "server 1 left 2 initiations unanswered")
    }

    /// fastest across the endpoints of one key: the second's handshake waits for the engine's
    /// floor (5 s after the first's initiation); the wait is not its round trip.
    @Test func aHandshakeHeldBackByTheFloorIsMeasuredFromWhenItLeaves() {
        var choice = ServerChoice(mode: .fastest, count: 2)
        #expect(choice.step(now: .seconds(0), lastHandshake: nil) == .probe)
        #expect(choice.step(now: .seconds(1), lastHandshake: .seconds(0.05)) == .use(1))
        choice.initiationLeaves(at: .seconds(5))
        #expect(choice.step(now: .seconds(6), lastHandshake: .seconds(5.02)) == .none)
        #expect(choice.current == 1 && choice.isUp && choice.roundTrips.map { $0?.duration.map(ServerChoice.milliseconds) } == [50, 20])
        choice.initiationLeaves(at: .seconds(100))
        #expect(choice.isUp, "only a probe waiting for its answer moves")
    }
}
