import Control
import WireGuard

/// A built-in tunnel's engine as `vpnctl status` shows it (what `wg show` would).
extension WireGuardReport {
    public init(_ status: EngineStatus) {
        self.init(publicKey: status.publicKey?.base64, listenPort: status.listenPort,
                  peers: status.peers.map { peer in
                      var report = WireGuardPeerReport(publicKey: peer.publicKey.base64, allowedIPs: peer.allowedIPs.map(\.description))
                      report.endpoint = peer.endpoint?.description
                      report.latestHandshake = peer.lastHandshake.map { Double($0.seconds) + Double($0.nanoseconds) / 1e9 }
                      report.rxBytes = peer.rxBytes
                      report.txBytes = peer.txBytes
                      return report
                  },
                  // Every reason, those that never happened at 0: a counter that appears only
                  // once it is non-zero reads as missing data to Prometheus' rate().
                  drops: Dictionary(uniqueKeysWithValues: DropReason.allCases.map { ($0.rawValue, status.drops[$0] ?? 0) }))
    }
}
