import Foundation
import NetTestSupport

/// A `vpn-server` in the topology's server namespace and the wg-quick file that makes one of
/// vpnd's built-in tunnels its peer: where every test of a built-in tunnel starts.
struct BuiltInTunnelPeer {
    /// The client's file (mode 0600, beside the daemon's policy directory), for `tunnel.wireguard`.
    let conf: String
    let server: OurTunnel
    /// The tunnel's addresses: the server's `.1`, the client's `.2` in `network`.
    let serverAddress: String
    let clientAddress: String
    /// The client's private key and both public keys (base64), as status and `wg` show them.
    let clientKey: String
    let clientPublic: String
    let serverPublic: String

    /// `network` is the tunnel's /24 ("10.78.0"); the client's file (FILE.conf) sends
    /// `allowedIPs` through it; the server's interface is vx<tag><serverName>.
    init(net: Topology, daemon: DaemonHarness, cleanup: Cleanup, network: String = "10.78.0", port: Int = 51960,
         allowedIPs: String = "0.0.0.0/0", keepalive: Int? = nil, file: String = "work", serverName: String = "o") throws {
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        self.clientKey = clientKey
        self.clientPublic = clientPublic
        self.serverPublic = serverPublic
        serverAddress = network + ".1"
        clientAddress = network + ".2"
        server = try OurTunnel(in: net.server, name: "vx\(net.tag)\(serverName)", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = \(port)
            Address = \(serverAddress)/24
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = \(clientAddress)/32
            """)
        let keepaliveLine = keepalive.map { "\nPersistentKeepalive = \($0)" } ?? ""
        conf = ServerScene.write(daemon, file, """
            [Interface]
            PrivateKey = \(clientKey)
            Address = \(clientAddress)/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):\(port)
            AllowedIPs = \(allowedIPs)
            """ + keepaliveLine)
    }

    /// The `wg` socket vpnd serves for the built-in tunnel, removed with everything else.
    static func removeSocketAtCleanup(_ interface: String, _ cleanup: Cleanup) {
        cleanup.add("remove \(interface).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(interface).sock") }
    }
}
