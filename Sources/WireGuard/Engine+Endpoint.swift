import Addresses
import Monotonic

/// Moving a peer to another of its server's addresses (several `Endpoint` lines for one key:
/// ServerFailover), without tearing anything down.
extension Engine {
    /// Sets the peer's endpoint and nothing else, under one lock (an upsert built from a
    /// status read could undo what another thread changed meanwhile, such as an on-demand
    /// teardown's keepalive). Sessions, timers and counters stay; what is sent next goes to
    /// `endpoint`, and a handshake authenticated from elsewhere still roams as usual.
    /// false: no such peer.
    @discardableResult
    public func setEndpoint(_ endpoint: Endpoint, of key: PublicKey) -> Bool {
        state.withLock { s in
            guard let id = s.peerByKey[key], let peer = s.peers[id] else { return false }
            peer.configuration.endpoint = endpoint
            return true
        }
    }
}
