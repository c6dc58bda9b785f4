import Foundation
import NetTestSupport
import Policy
import Testing
import TrustedFiles
import TunnelFiles
import WireGuard

/// The wg-quick files of a policy's built-in tunnels, as vpnd and `vpnctl check` read them:
/// every problem of every file at once, each at its place (issue 43, item 8).
@Suite struct TunnelFilesTests {
    @Test func everyProblemOfEveryFileNamesTheFile() throws {
        try requireRoot()
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let directory = "/tmp/vx-tunnel-files-\(uniqueTag())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        cleanup.add("remove \(directory)") { try? FileManager.default.removeItem(atPath: directory) }
        let bad = directory + "/bad.conf"
        let text = "[Interface]\nPrivateKey = \(PrivateKey.generate().base64)\nAdress = 10.8.0.2/24\nMTUU = 1400\n"
            + "[Peer]\nPublicKey = \(PrivateKey.generate().publicKey.base64)\nAllowedIPs = 0.0.0.0/0\n"
        #expect(FileManager.default.createFile(atPath: bad, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        let policy = try Policy.parse([PolicySource(path: "/p/10.toml", text: """
            [profile.work]
            tunnel.wireguard = "\(directory)/gone/work.conf"
            [profile.home]
            tunnel.wireguard = "\(directory)/home.conf"
            [profile.lab]
            tunnel.wireguard = "\(bad)"
            """)], resolver: SystemNameResolver())
        #expect {
            try TunnelFiles.load(policy)
        } throws: { error in
            let said = (error as? PolicyError)?.diagnostics.map(\.description)
            return said == [
                // The file first, then the directory on its way that is missing (it was that alone).
                "/p/10.toml:2:20: error: profile work: cannot use its wg-quick file \(directory)/gone/work.conf: \(directory)/gone: No such file or directory",
                "/p/10.toml:4:20: error: profile home: cannot use its wg-quick file \(directory)/home.conf: No such file or directory",
                "\(bad):3:1: error: unknown key \"Adress\" in [Interface]; did you mean \"Address\"? (the wg-quick file of profile lab)",
                "\(bad):4:1: error: unknown key \"MTUU\" in [Interface]; did you mean \"MTU\"? (the wg-quick file of profile lab)",
            ]
        }
    }
}
