import Addresses
import Glibc
import Testing
import WireGuard

/// vpnd reads a userspace WireGuard's transport from its `get=1` answer.
@Suite struct UAPITransportTests {
    func parse(_ text: String) throws(UAPI.ProtocolError) -> UAPI.Transport {
        let bytes = Array(text.utf8)
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(UAPI.ProtocolError) in try UAPI.Transport.parse(buffer) } }
        return try result.get()
    }

    @Test func readsPortMarkAndEndpointsOfWhatWeRender() throws {
        let key = PrivateKey.generate()
        let peers = [("192.0.2.1", UInt16(9)), ("2001:db8::7", UInt16(51821))].map { address, port in
            UAPI.PeerReport(publicKey: PrivateKey.generate().publicKey, presharedKey: PresharedKey(hex: String(repeating: "ab", count: 32)), endpoint: (IPAddress(address)!, port),
                            lastHandshake: nil, txBytes: 1, rxBytes: 2, persistentKeepalive: 25, allowedIPs: [IPPrefix("0.0.0.0/0")!])
        }
        let text = UAPI.renderGet(privateKey: key, listenPort: 40123, fwmark: 0xca6c, peers: peers)
        #expect(try parse(text) == UAPI.Transport(listenPort: 40123, fwmark: 0xca6c, endpoints: [
            .init(address: IPAddress("192.0.2.1")!, port: 9), .init(address: IPAddress("2001:db8::7")!, port: 51821),
        ]))
        // No mark, no peers: what wireguard-go answers for a bare device.
        #expect(try parse("private_key=\(key.hex)\nlisten_port=51820\nerrno=0\n\n") == UAPI.Transport(listenPort: 51820, fwmark: nil, endpoints: []))
        #expect(try parse("listen_port=1\nfwmark=0\nerrno=0\n\n").fwmark == nil)
    }

    @Test(arguments: [
        "listen_port=51820\n\n",                          // no errno: cut short
        "errno=-19\n\n",                                  // the get failed
        "fwmark=1\nerrno=0\n\n",                          // no port
        "listen_port=70000\nerrno=0\n\n",                 // not a port
        "listen_port=1\nendpoint=host.example:1\nerrno=0\n\n",
        "listen_port=1\nnonsense\nerrno=0\n\n",
    ])
    func refusesWhatIsNotAWholeGoodAnswer(_ text: String) {
        #expect(throws: UAPI.ProtocolError.self) { try parse(text) }
    }

    /// An error never shows a key, even when the line next to it is broken.
    @Test func errorsShowNoKey() {
        let key = PrivateKey.generate()
        do {
            _ = try parse("private_key=\(key.hex)\nlisten_port=\(key.hex)\nerrno=0\n\n")
            Issue.record("accepted")
        } catch {
            #expect(!error.message.contains(key.hex))
        }
    }
}
