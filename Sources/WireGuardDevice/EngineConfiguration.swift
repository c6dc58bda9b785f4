import WireGuard

/// A wg-quick file as the engine's configuration, endpoints resolved.
public enum EngineConfiguration {
    public static func from(_ file: WgQuickConfig) throws -> InterfaceConfiguration {
        InterfaceConfiguration(
            privateKey: file.interface.privateKey, listenPort: file.interface.listenPort, fwmark: file.interface.fwmark,
            peers: try file.peers.map { peer in
                PeerConfiguration(publicKey: peer.publicKey, presharedKey: peer.presharedKey,
                                  endpoint: try peer.endpoint.map { try EndpointResolver.resolve($0, file: file.file, line: peer.line) },
                                  allowedIPs: peer.allowedIPs, persistentKeepalive: peer.persistentKeepalive)
            })
    }
}
