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
        ("Colour = blue", 8, "unknown key \"Colour\" in [Interface] (known keys: PrivateKey, ListenPort, FwMark, Address, DNS, MTU, Table, SaveConfig)"),
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
            guard let errors = (error as? WgQuickConfigErrors)?.errors, errors.count == 1, let e = errors.first else { return false }
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
            (error as? WgQuickConfigErrors)?.errors.contains { $0.line == line && $0.message.contains(fragment) } == true
        }
    }

    /// Issue 43: "unknown key Adress in [Interface]" was the only error of a file with three,
    /// and said no more than the list of keys. Now every error comes, in line order, a
    /// misspelt key with the key meant; a key misspelt is not also said to be missing.
    @Test func everyErrorIsSaidAndAMisspeltKeyWithTheKeyMeant() {
        let text = """
            [Interface]
            PrivatKey = \(privateKey.base64)
            Adress = 10.8.0.2/24
            MTU = 70000
            [Peer]
            Publickey = \(peerKey.base64)
            AllowedIP = 0.0.0.0/0
            Colour = blue
            """
        #expect {
            try WgQuickConfig.parse(text, file: "work.conf")
        } throws: { error in
            let said = (error as? WgQuickConfigErrors)?.errors.map(\.description)
            return said == [
                "work.conf:2:1: unknown key \"PrivatKey\" in [Interface]; did you mean \"PrivateKey\"?",
                "work.conf:3:1: unknown key \"Adress\" in [Interface]; did you mean \"Address\"?",
                "work.conf:4:7: MTU \"70000\" must be a number between 576 and 65535",
                "work.conf:7:1: unknown key \"AllowedIP\" in [Peer]; did you mean \"AllowedIPs\"?",
                "work.conf:8:1: unknown key \"Colour\" in [Peer] (known keys: PublicKey, PresharedKey, Endpoint, AllowedIPs, PersistentKeepalive)",
            ]
        }
    }

    /// What follows from an error is not said again: a key refused is not also missing; the
    /// keys of a section that was itself refused are not read; keys before any section are
    /// said once, and then no "no [Interface] section".
    @Test(arguments: [
        ("[Interface]\nPrivateKey = \(PrivateKey.generate().base64)\n[Peer]\nPublicKey = abc\n[Peers]\nPublicKey = abc\nColour = blue\n", [4, 5]),
        ("[Interface]\nPrivateKey = abc\n", [2]),
        ("Address = 10.0.0.1/24\nDNS = 10.0.0.1\n[Peer]\nPublicKey = \(PrivateKey.generate().publicKey.base64)\n", [1]),
        ("[Interfaec]\nPrivateKey = abc\n", [1]),
        ("[Interface]\nPrivateKey = \(PrivateKey.generate().base64)\n[Interface]\nMTU = 1\n", [3]),
    ])
    func effectsOfAnErrorAreNotSaidAgain(text: String, lines: [Int]) {
        #expect {
            try WgQuickConfig.parse(text, file: "f")
        } throws: { error in
            (error as? WgQuickConfigErrors)?.errors.map(\.line) == lines
        }
    }

    @Test func peersAreCheckedAsAWhole() {
        let dup = sample() + "\n[Peer]\nPublicKey = \(peerKey.base64)\n"
        #expect(throws: WgQuickConfigErrors.self) { try WgQuickConfig.parse(dup, file: "f") }
        let overlap = sample() + "\n[Peer]\nPublicKey = \(PrivateKey.generate().publicKey.base64)\nAllowedIPs = 0.0.0.0/0\n"
        #expect {
            try WgQuickConfig.parse(overlap, file: "f")
        } throws: { ($0 as? WgQuickConfigErrors)?.errors.first?.message.contains("already the peer's at line 9") == true }
        let noKey = sample() + "\n[Peer]\nAllowedIPs = 10.9.0.0/24\n"
        #expect {
            try WgQuickConfig.parse(noKey, file: "f")
        } throws: { ($0 as? WgQuickConfigErrors)?.errors.map(\.line) == [15] }
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
            // Every error of the file, not only the one looked for ("[Peer] has no PublicKey" too).
            guard let errors = (error as? WgQuickConfigErrors)?.errors, let e = errors.first(where: { $0.line == line }) else { return false }
            let shown = "\(error)"
            let core = String(secret.prefix(20))
            return e.column == column && e.message.contains(fragment)
                && !shown.contains(core) && e.description.hasPrefix("leak.conf:\(line):\(column): ")
        }
    }

    /// wg-quick's `Table`: off, auto (or empty), main, or a number; anything else (a name
    /// from rt_tables, 0) is refused with its line rather than handed to routes later.
    @Test(arguments: [
        ("Table = off", WgQuickConfig.RouteTable.off), ("Table = auto", .auto), ("Table =", .auto),
        ("Table = 1234", .number(1234)), ("Table = main", .number(254)), ("", .auto),
    ])
    func tableValues(line: String, table: WgQuickConfig.RouteTable) throws {
        let config = try WgQuickConfig.parse(sample(line), file: "t.conf")
        #expect(config.interface.table == table)
        if !line.isEmpty { #expect(config.interface.keyLines["table"] == 8) }
    }

    @Test(arguments: ["Table = 0", "Table = vpn", "Table = -1", "Table = 4294967296", "SaveConfig = yes", "SaveConfig ="])
    func badTableAndSaveConfigValues(line: String) {
        #expect {
            try WgQuickConfig.parse(sample(line), file: "t.conf")
        } throws: { ($0 as? WgQuickConfigErrors)?.errors.map(\.line) == [8] }
    }

    @Test func saveConfigIsABooleanInAnyCase() throws {
        #expect(try WgQuickConfig.parse(sample("SaveConfig = True"), file: "t").interface.saveConfig)
        #expect(try !WgQuickConfig.parse(sample("SaveConfig = false"), file: "t").interface.saveConfig)
        #expect(try !WgQuickConfig.parse(sample(), file: "t").interface.saveConfig)
        // The line of DNS, for the warning that says it is not applied.
        #expect(try WgQuickConfig.parse(sample(), file: "t").interface.keyLines["dns"] == 5)
    }

    @Test(arguments: ["192.0.2.1", "192.0.2.1:", ":51820", "[2001:db8::1]51820", "2001:db8::1:51820", "host_name:1", "a:0", "a:65536"])
    func badEndpoints(text: String) {
        #expect(WgQuickConfig.EndpointSpec(text) == nil)
    }
}
