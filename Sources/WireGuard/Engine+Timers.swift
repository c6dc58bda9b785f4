import Monotonic

/// wireguard-go's timers: events arm deadlines in `PeerTimers` (with the lock held, from the
/// other steps); `tick` fires the due ones.
extension Engine {
    /// Fires due timers: handshake retries, keepalives, rekeys, key expiry. Call it every
    /// ~100 ms; returns what to send.
    public func tick(now: MonotonicInstant, wall: WallClock) -> [Datagram] {
        state.withLock { s in
            for peer in s.peers.values {
                s.fireTimers(peer, now: now, wall: wall)
            }
            return s.drainOutput()
        }
    }
}

extension EngineState {
    mutating func dataSent(_ peer: Peer, now: MonotonicInstant) {
        anyAuthenticatedPacketSent(peer, now: now)
        authenticatedTraversal(peer, now: now)
        if peer.timers.newHandshake == nil {
            peer.timers.newHandshake = now + timing.keepaliveTimeout + timing.rekeyTimeout + jitter()
        }
    }

    func dataReceived(_ peer: Peer, now: MonotonicInstant) {
        if peer.timers.sendKeepalive == nil {
            peer.timers.sendKeepalive = now + timing.keepaliveTimeout
        } else {
            peer.timers.needAnotherKeepalive = true
        }
    }

    func anyAuthenticatedPacketSent(_ peer: Peer, now: MonotonicInstant) {
        peer.timers.sendKeepalive = nil
    }

    func authenticatedTraversal(_ peer: Peer, now: MonotonicInstant) {
        if let seconds = peer.configuration.persistentKeepalive, seconds > 0 {
            peer.timers.persistentKeepalive = now + .seconds(Double(seconds))
        }
    }

    func handshakeComplete(_ peer: Peer, now: MonotonicInstant, wall: WallClock) {
        peer.timers.retransmitHandshake = nil
        peer.timers.handshakeAttempts = 0
        peer.reconnect.succeeded()
        peer.lastHandshake = wall
        peer.lastHandshakeAt = now
    }

    mutating func fireTimers(_ peer: Peer, now: MonotonicInstant, wall: WallClock) {
        if let due = peer.timers.retransmitHandshake, due <= now {
            peer.timers.retransmitHandshake = nil
            if peer.pending != nil { peer.reconnect.unanswered() }
            if let limit = peer.reconnect.policy.maximumRetries, peer.timers.handshakeAttempts >= limit {
                // Give up until there is traffic again; stale staged packets go.
                peer.timers.sendKeepalive = nil
                peer.staged = []
                if let p = peer.pending { indices[p.senderIndex] = nil; peer.pending = nil }
                if peer.timers.zeroKeyMaterial == nil { peer.timers.zeroKeyMaterial = now + timing.rejectAfterTime * 3 }
            } else {
                peer.timers.handshakeAttempts += 1
                initiate(peer, now: now, wall: wall, retry: true)
            }
        }
        if let due = peer.timers.sendKeepalive, due <= now {
            peer.timers.sendKeepalive = nil
            if let d = transportDatagram([], peer: peer, now: now) { output.append(d) }
            if peer.timers.needAnotherKeepalive {
                peer.timers.needAnotherKeepalive = false
                peer.timers.sendKeepalive = now + timing.keepaliveTimeout
            }
        }
        if let due = peer.timers.newHandshake, due <= now {
            // We sent data and heard nothing back for KEEPALIVE + REKEY_TIMEOUT.
            peer.timers.newHandshake = nil
            initiate(peer, now: now, wall: wall, retry: false)
        }
        if let due = peer.timers.persistentKeepalive, due <= now {
            peer.timers.persistentKeepalive = nil
            if let d = transportDatagram([], peer: peer, now: now) {
                output.append(d)
                authenticatedTraversal(peer, now: now)
            } else if peer.configuration.endpoint != nil {
                initiate(peer, now: now, wall: wall, retry: false)
            }
        }
        if let due = peer.timers.zeroKeyMaterial, due <= now {
            peer.timers.zeroKeyMaterial = nil
            forgetSessions(peer)
        }
        // Sessions past REJECT_AFTER_TIME are useless: drop their indices and keys.
        for keypair in peer.keypairs where now.since(keypair.createdAt) >= timing.rejectAfterTime {
            indices[keypair.localIndex] = nil
            if peer.current === keypair { peer.current = nil }
            if peer.previous === keypair { peer.previous = nil }
            if peer.next === keypair { peer.next = nil }
        }
    }
}
