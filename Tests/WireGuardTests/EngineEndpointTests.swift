import Addresses
import Testing
@testable import WireGuard

/// `setEndpoint`: another address for a peer (several Endpoints of one key) without tearing
/// its session down.
@Suite struct EngineEndpointTests {
    @Test func theSessionStaysAndWhatIsSentNextGoesToTheNewEndpoint() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80", tag: 1), from: "b")
        pair.run()
        let before = pair.b.status.peers[0]
        #expect(before.lastHandshake != nil && before.endpoint == pair.aEndpoint)
        let other = Endpoint(address: IPAddress("203.0.113.9")!, port: 51821)
        #expect(pair.b.setEndpoint(other, of: pair.aKey.publicKey))
        #expect(!pair.b.setEndpoint(other, of: PrivateKey.generate().publicKey), "no such peer")
        let after = pair.b.status.peers[0]
        #expect(after.endpoint == other && after.lastHandshake == before.lastHandshake && after.txBytes == before.txBytes)
        #expect(after.allowedIPs == before.allowedIPs)
        guard case let .send(_, to) = pair.send(ipv4("10.0.0.2", "192.0.2.80", tag: 2), from: "b") else {
            Issue.record("the session was dropped"); return
        }
        #expect(to == other)
    }
}
