/// Ending a peer's sessions without removing the peer: what an on-demand tunnel's teardown
/// needs (DemandControl). Removing and adding the peer again did the same but started its
/// byte counters (and its guards) from zero at every bring-up.
extension Engine {
    /// Drops the peer's sessions (current, previous, next: their keys are wiped as they go,
    /// SecretBytes), its handshake under way (the ephemeral key with it), its staged packets
    /// and its timers, and forgets its latest handshake, so it has nothing to send and no
    /// session to receive with. Kept: the peer and its configuration, allowed IPs, byte
    /// counters, the TAI64N guard against replayed initiations, the cookie from its server and
    /// its reconnect schedule's recent initiations (the floor and the storm limit hold across
    /// a teardown); the schedule's count starts again.
    public func resetSessions(_ key: PublicKey) {
        state.withLock { $0.resetSessions(key) }
    }
}

extension EngineState {
    mutating func resetSessions(_ key: PublicKey) {
        guard let id = peerByKey[key], let peer = peers[id] else { return }
        // The index table entries go with the sessions; an answer to the dropped handshake
        // finds no pending initiation and is dropped (acceptResponse checks).
        forgetSessions(peer)
        peer.staged = []
        peer.timers = PeerTimers()
        peer.lastHandshake = nil
        peer.lastHandshakeAt = nil
        // Its check drops a new initiation within REKEY_TIMEOUT of the last one without
        // scheduling a retry (the dropped handshake's timer did that): with the timers gone,
        // a bring-up soon after a teardown would then wait for traffic. The reconnect
        // schedule's floor, kept above, delays such an initiation instead of dropping it.
        peer.lastInitiationSent = nil
        peer.rekeyRequestedOnReceive = false
        peer.reconnect.networkChanged()
        peer.reconnect.lastError = nil
    }
}
