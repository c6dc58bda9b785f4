import Addresses
import Foundation
import Testing
@testable import WireGuard

@Suite struct WgQuickConfigTests {
    let privateKey = PrivateKey.generate()
    let peerKey = PrivateKey.generate().publicKey
    let psk = PrivateKey.generate()   // any 32 bytes serve as a psk's encoding

    func sample(_ extra: String = "") -> String {
        """
        # a provider's file
        [Interface]
        PrivateKey = \(privateKey.base64)
        Address = 10.8.0.2/24, fd00:8::2/64
        DNS = 10.8.0.1, corp.example
        MTU = 1380
        ListenPort = 51821
        \(extra)
        [Peer]
        PublicKey = \(peerKey.base64)
        PresharedKey = \(psk.base64)
        Endpoint = [2001:db8::1]:51820
        AllowedIPs = 0.0.0.0/0, ::/0   # everything
        PersistentKeepalive = 25
        """
    }

    @Test func parsesEveryKeyOfAProviderFile() throws {
        let config = try WgQuickConfig.parse(sample(), file: "work.conf")
        #expect(config.interface.privateKey.hex == privateKey.hex)
        #expect(config.interface.addresses.map(\.description) == ["10.8.0.2/24", "fd00:8::2/64"])
        #expect(config.interface.dnsServers == [IPAddress("10.8.0.1")!])
        #expect(config.interface.dnsSearch == ["corp.example"])
        #expect(config.interface.mtu == 1380)
        #expect(config.interface.listenPort == 51821)
        let peer = try #require(config.peers.first)
        #expect(peer.publicKey == peerKey)
        #expect(peer.presharedKey?.hex == psk.hex)
        #expect(peer.endpoint?.description == "[2001:db8::1]:51820")
        #expect(peer.allowedIPs.map(\.description) == ["0.0.0.0/0", "::/0"])
        #expect(peer.persistentKeepalive == 25)
        #expect(peer.line == 9)
    }

    @Test func keysAreCaseInsensitiveAndHostNamesKept() throws {
        let text = """
        [interface]
        privatekey=\(privateKey.base64)
        [PEER]
        publickey = \(peerKey.base64)
        endpoint = vpn.example.com:443
        allowedips = 192.0.2.7
        persistentkeepalive = off
        """
        let config = try WgQuickConfig.parse(text, file: "f")
        #expect(config.peers[0].endpoint == WgQuickConfig.EndpointSpec(host: .name("vpn.example.com"), port: 443))
        #expect(config.peers[0].allowedIPs.map(\.description) == ["192.0.2.7/32"])
        #expect(config.peers[0].persistentKeepalive == nil)
    }

    @Test(arguments: [
        ("PostUp = iptables -A FORWARD", 8, "runs a shell command"),
        ("Colour = blue", 8, "unknown key Colour in [Interface]"),
        ("MTU = 1280", 8, "MTU given twice in one section"),
        ("FwMark = banana", 8, "FwMark \"banana\""),
        ("Address = 10.0.0.300/24", 8, "Address \"10.0.0.300/24\""),
        ("Table = off\nSaveConfig = true\nPreDown = true", 10, "runs a shell command"),
        ("PrivateKey = \(PrivateKey.generate().base64)", 8, "given twice"),
    ])
    func errorsNameTheLine(extra: String, line: Int, fragment: String) {
        #expect {
            try WgQuickConfig.parse(sample(extra), file: "work.conf")
        } throws: { error in
            guard let e = error as? WgQuickConfigError else { return false }
            return e.file == "work.conf" && e.line == line && e.message.contains(fragment)
        }
    }

    @Test(arguments: [
        ("[Interface]\n", 1, "has no PrivateKey"),
        ("Address = 10.0.0.1/24\n", 1, "outside a section"),
        ("", 1, "no [Interface]"),
        ("[Interface]\nPrivateKey = abc\n", 2, "not a base64 key"),
        ("[Tunnel]\n", 1, "unknown section"),
        ("[Interface]\nMTU = 70000\n", 2, "between 576 and 65535"),
        ("[Interface]\nListenPort = 99999\n", 2, "not a port number"),
        ("[Interface]\njust words\n", 2, "expected Key = Value"),
    ])
    func structuralErrors(text: String, line: Int, fragment: String) {
        #expect {
            try WgQuickConfig.parse(text, file: "x.conf")
        } throws: { error in
            guard let e = error as? WgQuickConfigError else { return false }
            return e.line == line && e.message.contains(fragment)
        }
    }

    @Test func peersAreCheckedAsAWhole() {
        let dup = sample() + "\n[Peer]\nPublicKey = \(peerKey.base64)\n"
        #expect(throws: WgQuickConfigError.self) { try WgQuickConfig.parse(dup, file: "f") }
        let overlap = sample() + "\n[Peer]\nPublicKey = \(PrivateKey.generate().publicKey.base64)\nAllowedIPs = 0.0.0.0/0\n"
        #expect {
            try WgQuickConfig.parse(overlap, file: "f")
        } throws: { ($0 as? WgQuickConfigError)?.message.contains("already the peer's at line 9") == true }
        let noKey = sample() + "\n[Peer]\nAllowedIPs = 10.9.0.0/24\n"
        #expect {
            try WgQuickConfig.parse(noKey, file: "f")
        } throws: { ($0 as? WgQuickConfigError)?.line == 15 }
    }

    @Test func crlfLineEndsAreAcceptedAsWgQuickAcceptsThem() throws {
        let unix = try WgQuickConfig.parse(sample(), file: "f")
        let dos = try WgQuickConfig.parse(sample().replacingOccurrences(of: "\n", with: "\r\n") + "\r\n", file: "f")
        #expect(dos.interface.privateKey.hex == unix.interface.privateKey.hex)
        #expect(dos.interface.addresses == unix.interface.addresses)
        #expect(dos.peers.map { $0.publicKey } == unix.peers.map { $0.publicKey })
        #expect(dos.peers[0].allowedIPs == unix.peers[0].allowedIPs)
        #expect(dos.peers[0].persistentKeepalive == 25 && dos.peers[0].line == 9)
    }

    /// Whatever is wrong with a file, its error shows file:line:column and key names, never
    /// a private or pre-shared key: not for a broken CRLF file, not for a key pasted on a
    /// line of its own (base64 keys end in '=', so they look like "KEY =" lines), not for a
    /// key pasted as another key's value.
    @Test(arguments: [
        ("[Interface]\r\nPrivateKey = SECRET\r\nAddress = 10.0.0.300/24\r\n", 3, 11, "Address \"10.0.0.300/24\""),
        ("[Interface]\nPrivateKey = SECRET\nSECRET\n", 3, 1, "not a key of wg-quick files"),
        ("[Interface]\nPrivateKey = SECRET\nSECRETN\n", 3, 1, "expected Key = Value"),
        ("[Interface]\nPrivateKey = SECRET\n[Peer]\nEndpoint = SECRET\n", 4, 12, "Endpoint (a value not shown"),
        ("[Interface]\nPrivateKey = SECRET\n[Peer]\nPresharedKey = SECRETX\n", 4, 16, "PresharedKey is not a base64 key"),
        ("[Interface]\nListenPort = SECRET\n", 2, 14, "ListenPort (a value not shown"),
        ("[SECRET]\n", 1, 1, "unknown section (a value not shown"),
    ])
    func errorsNeverShowAKey(template: String, line: Int, column: Int, fragment: String) {
        let secret = PrivateKey.generate().base64
        let text = template.replacingOccurrences(of: "SECRETN", with: String(secret.dropLast()))
            .replacingOccurrences(of: "SECRETX", with: String(secret.dropLast(4)) + "!!!=")
            .replacingOccurrences(of: "SECRET", with: secret)
        #expect {
            try WgQuickConfig.parse(text, file: "leak.conf")
        } throws: { error in
            guard let e = error as? WgQuickConfigError else { return false }
            let shown = e.description
            let core = String(secret.prefix(20))
            return e.line == line && e.column == column && e.message.contains(fragment)
                && !shown.contains(core) && shown.hasPrefix("leak.conf:\(line):\(column): ")
        }
    }

    @Test(arguments: ["192.0.2.1", "192.0.2.1:", ":51820", "[2001:db8::1]51820", "2001:db8::1:51820", "host_name:1", "a:0", "a:65536"])
    func badEndpoints(text: String) {
        #expect(WgQuickConfig.EndpointSpec(text) == nil)
    }
}

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
}
