import Addresses
import Glibc
import Testing
@testable import WireGuard

/// The `wg` tool's socket protocol: requests as `wg` sends them, answers as wireguard-go
/// writes them (errors included), and refusals whose reasons never show a key.
@Suite struct UAPITests {
    @Test func parsesASetRequestLikeWgSends() throws {
        let key = PrivateKey.generate()
        let peer = PrivateKey.generate().publicKey
        let lines: [Substring] = [
            "set=1", "private_key=\(key.hex)", "listen_port=51820", "fwmark=0", "replace_peers=true",
            "public_key=\(peer.hex)", "preshared_key=\(String(repeating: "0", count: 64))",
            "endpoint=[2001:db8::5]:4000", "persistent_keepalive_interval=25", "replace_allowed_ips=true",
            "allowed_ip=10.0.0.0/8", "allowed_ip=2001:db8::/32", "protocol_version=1",
            "public_key=\(PrivateKey.generate().publicKey.hex)", "remove=true",
        ]
        guard case let .set(request) = try UAPI.parse(lines: lines) else { Issue.record("not a set"); return }
        #expect(request.privateKey??.hex == key.hex)
        #expect(request.listenPort == 51820)
        #expect(request.fwmark == 0)
        #expect(request.replacePeers)
        #expect(request.peers.count == 2)
        let first = request.peers[0]
        #expect(first.publicKey == peer)
        #expect(first.presharedKey != nil && first.presharedKey! == nil)   // all zeros: remove
        #expect(first.endpoint?.address == IPAddress("2001:db8::5") && first.endpoint?.port == 4000)
        #expect(first.allowedIPs.map(\.description) == ["10.0.0.0/8", "2001:db8::/32"])
        #expect(first.allowedIPChanges == [.add(IPPrefix("10.0.0.0/8")!), .add(IPPrefix("2001:db8::/32")!)])
        #expect(first.replaceAllowedIPs && first.persistentKeepalive == 25)
        #expect(request.peers[1].remove)
    }

    @Test(arguments: [["nope=1"], [], ["get=1", "x=y"], ["set=1", "listen_port=abc"], ["set=1", "bogus=1"],
                      ["set=1", "public_key=zz"], ["set=1", "public_key=\(String(repeating: "1", count: 64))", "endpoint=host:1"],
                      ["set=1", "public_key=\(String(repeating: "1", count: 64))", "protocol_version=2"]])
    func refusesMalformedRequests(lines: [String]) {
        #expect(throws: UAPI.ProtocolError.self) { try UAPI.parse(lines: lines.map { Substring($0) }) }
    }

    @Test func rendersGetInWireguardGoOrder() {
        let key = PrivateKey.generate()
        let peer = PrivateKey.generate().publicKey
        let text = UAPI.renderGet(privateKey: key, listenPort: 51820, fwmark: 0x20, peers: [
            UAPI.PeerReport(publicKey: peer, presharedKey: nil, endpoint: (IPAddress("192.0.2.1")!, 9),
                            lastHandshake: (1700000000, 5), txBytes: 10, rxBytes: 20, persistentKeepalive: 0,
                            allowedIPs: [IPPrefix("10.0.0.0/24")!]),
        ])
        #expect(text == """
        private_key=\(key.hex)
        listen_port=51820
        fwmark=32
        public_key=\(peer.hex)
        preshared_key=\(String(repeating: "0", count: 64))
        protocol_version=1
        endpoint=192.0.2.1:9
        last_handshake_time_sec=1700000000
        last_handshake_time_nsec=5
        tx_bytes=10
        rx_bytes=20
        persistent_keepalive_interval=0
        allowed_ip=10.0.0.0/24
        errno=0


        """)
    }

    /// `allowed_ip=-PREFIX` (wireguard-go; `wg set ... allowed-ips -10.0.0.0/8` in newer
    /// tools) removes, in order with the additions around it.
    @Test func allowedIPsAreAddedAndRemovedInOrder() throws {
        let peer = PrivateKey.generate().publicKey
        let lines: [Substring] = ["set=1", "public_key=\(peer.hex)", "allowed_ip=10.1.0.0/16", "allowed_ip=-10.2.0.0/16",
                                  "allowed_ip=-2001:db8::1/128", "allowed_ip=10.2.0.0/16"]
        guard case let .set(request) = try UAPI.parse(lines: lines) else { Issue.record("not a set"); return }
        #expect(request.peers[0].allowedIPChanges == [.add(IPPrefix("10.1.0.0/16")!), .remove(IPPrefix("10.2.0.0/16")!),
                                                      .remove(IPPrefix("2001:db8::1/128")!), .add(IPPrefix("10.2.0.0/16")!)])
    }

    /// As wireguard-go's ipc package: the errno is negated on the wire, so `wg` (which
    /// negates it back) prints "Invalid argument", not "Unknown error -22".
    @Test(arguments: [
        (["set=1", "bogus=1"], EINVAL), (["set=1", "listen_port=70000"], EINVAL), (["set=1", "no equals sign"], EPROTO),
        (["hello=1"], EPROTO), (["set=1", "public_key=\(String(repeating: "1", count: 64))", "allowed_ip=-x"], EINVAL),
    ])
    func errorsAnswerWithANegativeErrno(lines: [String], code: Int32) {
        #expect {
            try UAPI.parse(lines: lines.map { Substring($0) })
        } throws: { error in
            guard let e = error as? UAPI.ProtocolError else { return false }
            return e.code.value == code && UAPI.renderError(e) == "errno=-\(code)\n\n"
        }
        #expect(UAPI.renderError(UAPI.ProtocolError(message: "port taken", code: .portInUse)) == "errno=-98\n\n")
        #expect(UAPI.ErrorCode.invalid.description == "Invalid argument")
    }

    /// Refusals are logged with their reason, so the reason must never carry a key: not a
    /// key sent as an unknown key's name, nor as a value, nor on a line without '='.
    @Test(arguments: ["set=1\nKEY=1", "set=1\nlisten_port=KEY", "set=1\nKEY", "set=1\nfwmark=KEY",
                      "set=1\npublic_key=\(String(repeating: "1", count: 64))\nendpoint=KEY", "KEY"])
    func refusalsNeverShowAKey(template: String) {
        let key = PrivateKey.generate().hex
        let lines = template.replacingOccurrences(of: "KEY", with: key).split(separator: "\n")
        #expect {
            try UAPI.parse(lines: lines)
        } throws: { error in
            guard let e = error as? UAPI.ProtocolError else { return false }
            return !e.message.contains(key.prefix(20)) && !e.message.isEmpty
        }
    }
}
