import Addresses
import Testing
@testable import WireGuard

/// Several `Endpoint`s in one [Peer]: servers of one key to choose from (vpnexec only).
@Suite struct WgQuickEndpointsTests {
    let privateKey = PrivateKey.generate()
    let peerKey = PrivateKey.generate().publicKey

    func file(_ peer: String, more: String = "") -> String {
        "[Interface]\nPrivateKey = \(privateKey.base64)\nAddress = 10.8.0.2/24\n[Peer]\nPublicKey = \(peerKey.base64)\nAllowedIPs = 0.0.0.0/0\n\(peer)\(more)"
    }

    @Test func severalLinesOrACommaListInOrder() throws {
        let lines = try WgQuickConfig.parse(file("Endpoint = 192.0.2.1:51820\nEndpoint = vpn.example.com:443\nEndpoint = [2001:db8::1]:51820\n"), file: "f")
        #expect(lines.peers[0].endpoints.map(\.description) == ["192.0.2.1:51820", "vpn.example.com:443", "[2001:db8::1]:51820"])
        #expect(lines.peers[0].endpoint?.description == "192.0.2.1:51820", "the first is the one a single-server reader takes")
        let list = try WgQuickConfig.parse(file("Endpoint = 192.0.2.1:51820, 198.51.100.2:51821\n"), file: "f")
        #expect(list.peers[0].endpoints.map(\.description) == ["192.0.2.1:51820", "198.51.100.2:51821"])
    }

    @Test func oneEndpointIsAsBefore() throws {
        let one = try WgQuickConfig.parse(file("Endpoint = 192.0.2.1:51820\n"), file: "f")
        #expect(one.peers[0].endpoints.map(\.description) == ["192.0.2.1:51820"])
        #expect(one.peers[0].endpoint?.description == "192.0.2.1:51820")
        let none = try WgQuickConfig.parse(file(""), file: "f")
        #expect(none.peers[0].endpoints.isEmpty && none.peers[0].endpoint == nil)
    }

    @Test(arguments: [
        ("Endpoint = 192.0.2.1:51820\nEndpoint = 192.0.2.2\n", 8, 12, "Endpoint \"192.0.2.2\" is not host:port"),
        ("Endpoint = 192.0.2.1:51820, nonsense\n", 7, 12, "Endpoint \"nonsense\" is not host:port"),
        ("Endpoint = 192.0.2.1:51820\nEndpoint = 192.0.2.1:51820\n", 8, 12, "Endpoint 192.0.2.1:51820 is listed twice for this peer"),
        ("Endpoint =\n", 7, 11, "Endpoint is empty"),
    ])
    func badEndpointsNameTheirLine(peer: String, line: Int, column: Int, fragment: String) {
        #expect {
            try WgQuickConfig.parse(file(peer), file: "s.conf")
        } throws: { error in
            guard let e = (error as? WgQuickConfigErrors)?.errors.first else { return false }
            return e.file == "s.conf" && e.line == line && e.column == column && e.message.contains(fragment)
        }
    }

    /// With two peers it is not clear whose servers they are: the second Endpoint's line says so.
    @Test func severalEndpointsNeedAFileWithOnePeer() {
        let other = PrivateKey.generate().publicKey
        #expect {
            try WgQuickConfig.parse(file("Endpoint = 192.0.2.1:51820\nEndpoint = 192.0.2.2:51820\n",
                                         more: "[Peer]\nPublicKey = \(other.base64)\nAllowedIPs = 10.9.0.0/24\n"), file: "two.conf")
        } throws: { error in
            guard let e = (error as? WgQuickConfigErrors)?.errors.first else { return false }
            return e.file == "two.conf" && e.line == 8 && e.message == "several Endpoints (servers of one key to choose from) need a file with one [Peer]; this one has 2"
        }
        // One Endpoint each, as before: fine.
        #expect(throws: Never.self) {
            try WgQuickConfig.parse(file("Endpoint = 192.0.2.1:51820\n", more: "[Peer]\nPublicKey = \(other.base64)\nEndpoint = 192.0.2.2:51820\nAllowedIPs = 10.9.0.0/24\n"), file: "f")
        }
    }
}
