import Facts
import Plan
import Testing

/// A tunnel's `wg` socket that does not answer once (its daemon busy) must not make vpnd
/// forget the port it keeps out of the profiles: that would start the loop it prevents.
@Suite struct TransportMemoryTests {
    let known = TunnelTransport(source: .wireguardSocket, udpPort: 51820, owner: 0)

    @Test func aSilentSocketKeepsTheLastAnswer() {
        let silent = TunnelTransport(source: .wireguardSocket, detail: "did not answer: read: timed out")
        let kept = TransportReader.keepingKnown(silent, previous: known)
        #expect(kept.udpPort == 51820 && kept.owner == 0)
        #expect(kept.detail?.contains("did not answer") == true)
    }

    @Test func aNewAnswerOrAGoneSocketReplacesIt() {
        let moved = TunnelTransport(source: .wireguardSocket, udpPort: 40000, owner: 0)
        #expect(TransportReader.keepingKnown(moved, previous: known) == moved)
        let gone = TunnelTransport(source: .unknown, detail: "no wg socket")
        #expect(TransportReader.keepingKnown(gone, previous: known) == gone)
        let silent = TunnelTransport(source: .wireguardSocket, detail: "did not answer")
        #expect(TransportReader.keepingKnown(silent, previous: nil) == silent)
    }
}
