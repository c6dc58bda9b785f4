import Addresses
import Monotonic

/// Handshakes with the lock held: initiations out, the admission of a received message
/// (MAC1, cookies, rate limit), and the sessions that answers and responses create.
extension EngineState {
    /// A received handshake message's fate before the cryptography: refused with an answer,
    /// or admitted with what the unlocked work needs.
    enum Admission<Admitted: Sendable>: Sendable {
        case refused(Engine.Inbound)
        case admitted(Admitted)
    }

    /// Queues an initiation for `peer` unless one went out less than REKEY_TIMEOUT ago or
    /// the storm limit holds it back (it then leaves as a retry when allowed).
    mutating func initiate(_ peer: Peer, now: MonotonicInstant, wall: WallClock, retry: Bool) {
        guard let privateKey, let publicKey, let staticShared = peer.staticShared, let endpoint = peer.configuration.endpoint else { return }
        if !retry, let last = peer.lastInitiationSent, now.since(last) < timing.rekeyTimeout { return }
        if let allowed = peer.reconnect.hold(now) {
            if peer.timers.retransmitHandshake.map({ $0 > allowed }) ?? true { peer.timers.retransmitHandshake = allowed }
            return
        }
        if let old = peer.pending { indices[old.senderIndex] = nil }
        let index = indices.fresh(random)
        guard let (initiation, pending) = HandshakeCodec.createInitiation(
            local: privateKey, localPublic: publicKey, remote: peer.configuration.publicKey, staticShared: staticShared,
            ephemeral: PrivateKey(secret: SecretBytes { random.fill($0) }), senderIndex: index,
            timestamp: TAI64N.encode(wall), now: now) else { return }
        var message = initiation
        peer.cookies.addMACs(&message, now: now)
        peer.pending = pending
        indices[index] = .handshake(peer)
        peer.lastInitiationSent = now
        anyAuthenticatedPacketSent(peer, now: now)
        peer.timers.retransmitHandshake = peer.reconnect.initiated(now, random: random.uint32())
        output.append(Datagram(bytes: message, to: endpoint))
    }

    func jitter() -> MonotonicInstant.Duration { .milliseconds(UInt64(random.uint32() % 334)) }

    /// What every handshake message passes before any Diffie-Hellman: MAC1; under load,
    /// MAC2 (else a cookie reply) and its source's rate limit. nil admits it.
    mutating func admit(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: MonotonicInstant) -> Engine.Inbound? {
        guard var checker else { return .drop(count(.unknownPeer)) }
        guard checker.checkMAC1(m) else { return .drop(count(.badMAC)) }
        if underLoad && !checker.checkMAC2(m, source: source, now: now) {
            let reply = checker.reply(to: m, source: source, now: now)
            self.checker = checker
            count(.rateLimited)
            return .control([Datagram(bytes: reply, to: source)])
        }
        self.checker = checker
        if underLoad && !limiter.allow(source.address, now: now) { return .drop(count(.rateLimited)) }
        return nil
    }

    mutating func acceptInitiation(_ consumed: ConsumedInitiation, from source: Endpoint, now: MonotonicInstant) -> Engine.Inbound {
        guard let id = peerByKey[consumed.initiatorStatic], let peer = peers[id] else { return .drop(count(.unknownPeer)) }
        if let last = peer.lastTimestamp, !TAI64N.isAfter(consumed.timestamp, last) { return .drop(count(.staleTimestamp)) }
        if let last = peer.lastInitiationConsumed, now.since(last) < timing.initiationInterval { return .drop(count(.rateLimited)) }
        let index = indices.fresh(random)
        guard var (response, send, receive) = HandshakeCodec.createResponse(
            consumed, ephemeral: PrivateKey(secret: SecretBytes { random.fill($0) }), initiatorStatic: consumed.initiatorStatic,
            psk: peer.psk, senderIndex: index) else { return .drop(count(.badMAC)) }
        peer.lastTimestamp = consumed.timestamp
        peer.lastInitiationConsumed = now
        peer.cookies.addMACs(&response, now: now)
        let keypair = Keypair(send: send, receive: receive, localIndex: index, remoteIndex: consumed.initiatorIndex,
                              createdAt: now, isInitiator: false, peer: peer)
        Zero.wipe(&send)
        Zero.wipe(&receive)
        if let old = peer.next { indices[old.localIndex] = nil }
        peer.next = keypair
        indices[index] = .keypair(keypair)
        peer.configuration.endpoint = source
        peer.timers.zeroKeyMaterial = now + timing.rejectAfterTime * 3
        anyAuthenticatedPacketSent(peer, now: now)
        authenticatedTraversal(peer, now: now)
        return .control([Datagram(bytes: response, to: source)])
    }

    mutating func acceptResponse(send: [UInt8], receive: [UInt8], peer: Peer, localIndex receiver: UInt32, remoteIndex: UInt32,
                                 from source: Endpoint, now: MonotonicInstant, wall: WallClock) -> Engine.Inbound {
        // Another thread may have completed or replaced this handshake meanwhile.
        guard peer.pending?.senderIndex == receiver, peers[peer.id] === peer else { return .drop(count(.unknownPeer)) }
        let keypair = Keypair(send: send, receive: receive, localIndex: receiver, remoteIndex: remoteIndex,
                              createdAt: now, isInitiator: true, peer: peer)
        peer.pending = nil
        if let old = peer.previous { indices[old.localIndex] = nil }
        if let old = peer.next { indices[old.localIndex] = nil; peer.next = nil }
        peer.previous = peer.current
        peer.current = keypair
        indices[receiver] = .keypair(keypair)
        peer.configuration.endpoint = source
        peer.rekeyRequestedOnReceive = false
        handshakeComplete(peer, now: now, wall: wall)
        peer.timers.zeroKeyMaterial = now + timing.rejectAfterTime * 3
        peer.timers.newHandshake = nil
        authenticatedTraversal(peer, now: now)
        let before = output.count
        sendStaged(peer, now: now)
        if output.count == before, let keepalive = transportDatagram([], peer: peer, now: now) {
            // Confirms the session to the responder, which waits for a first packet.
            output.append(keepalive)
        }
        return .control(takeOutput(since: before))
    }
}
