import Addresses

/// Handshakes: initiations out, initiations and responses in, with the Diffie-Hellman work
/// outside the lock.
extension Engine {
    /// The locked admission step of a handshake message: refused with an answer, or
    /// admitted with what the unlocked cryptography needs.
    private enum Admission<Admitted> {
        case refused(Inbound)
        case admitted(Admitted)
    }

    /// Queues an initiation for `peer` unless one went out less than REKEY_TIMEOUT ago.
    /// Lock held.
    func initiate(_ peer: Peer, now: Timestamp, wall: WallClock, retry: Bool) {
        guard let privateKey, let publicKey, let staticShared = peer.staticShared, let endpoint = peer.configuration.endpoint else { return }
        if !retry, let last = peer.lastInitiationSent, now.since(last) < timing.rekeyTimeout { return }
        let allowed = peer.reconnect.earliest(now)
        guard allowed <= now else {
            // The storm limit holds this one back: it leaves (as a retry) when allowed.
            peer.reconnect.lastError = .stormLimited
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

    func jitter() -> Timestamp.Duration { .milliseconds(UInt64(random.uint32() % 334)) }

    /// What every handshake message passes before any Diffie-Hellman, with the lock held:
    /// MAC1; under load, MAC2 (else a cookie reply) and its source's rate limit. nil admits it.
    private func admitLocked(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: Timestamp) -> Inbound? {
        guard var checker else { return .drop(countLocked(.unknownPeer)) }
        guard checker.checkMAC1(m) else { return .drop(countLocked(.badMAC)) }
        if underLoad && !checker.checkMAC2(m, source: source, now: now) {
            let reply = checker.reply(to: m, source: source, now: now)
            self.checker = checker
            countLocked(.rateLimited)
            return .control([Datagram(bytes: reply, to: source)])
        }
        self.checker = checker
        if underLoad && !limiter.allow(source.address, now: now) { return .drop(countLocked(.rateLimited)) }
        return nil
    }

    func receiveInitiation(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: Timestamp, wall: WallClock) -> Inbound {
        let admission: Admission<(PrivateKey, PublicKey)> = lock.with {
            guard let privateKey = self.privateKey, let publicKey = self.publicKey else { return .refused(.drop(countLocked(.unknownPeer))) }
            if let answer = admitLocked(m, from: source, underLoad: underLoad, now: now) { return .refused(answer) }
            return .admitted((privateKey, publicKey))
        }
        let privateKey: PrivateKey, publicKey: PublicKey
        switch admission {
        case let .refused(answer): return answer
        case let .admitted(keys): (privateKey, publicKey) = keys
        }
        var unknown = false
        guard let consumed = HandshakeCodec.consumeInitiation(m, local: privateKey, localPublic: publicKey, staticShared: { key in
            let shared = self.lock.with { self.peerByKey[key].flatMap { self.peers[$0]?.staticShared } }
            unknown = shared == nil
            return shared
        }) else { return .drop(count(unknown ? .unknownPeer : .badMAC)) }
        return lock.with { acceptInitiationLocked(consumed, from: source, now: now) }
    }

    private func acceptInitiationLocked(_ consumed: ConsumedInitiation, from source: Endpoint, now: Timestamp) -> Inbound {
        guard let id = peerByKey[consumed.initiatorStatic], let peer = peers[id] else { return .drop(countLocked(.unknownPeer)) }
        if let last = peer.lastTimestamp, !TAI64N.isAfter(consumed.timestamp, last) { return .drop(countLocked(.staleTimestamp)) }
        if let last = peer.lastInitiationConsumed, now.since(last) < timing.initiationInterval { return .drop(countLocked(.rateLimited)) }
        let index = indices.fresh(random)
        guard var (response, send, receive) = HandshakeCodec.createResponse(
            consumed, ephemeral: PrivateKey(secret: SecretBytes { random.fill($0) }), initiatorStatic: consumed.initiatorStatic,
            psk: peer.psk, senderIndex: index) else { return .drop(countLocked(.badMAC)) }
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

    func receiveResponse(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: Timestamp, wall: WallClock) -> Inbound {
        let receiver = m.withUnsafeBytes { WireFormat.readUInt32($0, 8) }
        let admission: Admission<(PrivateKey, Peer, PendingInitiation, [UInt8])> = lock.with {
            guard let privateKey = self.privateKey else { return .refused(.drop(countLocked(.unknownPeer))) }
            if let answer = admitLocked(m, from: source, underLoad: underLoad, now: now) { return .refused(answer) }
            guard case let .handshake(peer)? = indices[receiver], let pending = peer.pending, pending.senderIndex == receiver else {
                return .refused(.drop(countLocked(.unknownPeer)))
            }
            return .admitted((privateKey, peer, pending, peer.psk))
        }
        let privateKey: PrivateKey, peer: Peer, pending: PendingInitiation, psk: [UInt8]
        switch admission {
        case let .refused(answer): return answer
        case let .admitted(found): (privateKey, peer, pending, psk) = found
        }
        guard var keys = HandshakeCodec.consumeResponse(m, pending: pending, local: privateKey, psk: psk) else {
            return .drop(count(.badMAC))
        }
        defer { Zero.wipe(&keys.send); Zero.wipe(&keys.receive) }
        return lock.with {
            // Another thread may have completed or replaced this handshake meanwhile.
            guard peer.pending?.senderIndex == receiver, peers[peer.id] === peer else { return .drop(countLocked(.unknownPeer)) }
            let remoteIndex = m.withUnsafeBytes { WireFormat.readUInt32($0, 4) }
            let keypair = Keypair(send: keys.send, receive: keys.receive, localIndex: receiver, remoteIndex: remoteIndex,
                                  createdAt: now, isInitiator: true, peer: peer)
            peer.pending = nil
            if let old = peer.previous { indices[old.localIndex] = nil }
            if let old = peer.next { indices[old.localIndex] = nil; peer.next = nil }
            peer.previous = peer.current
            peer.current = keypair
            indices[receiver] = .keypair(keypair)
            peer.configuration.endpoint = source
            peer.rekeyRequestedOnReceive = false
            handshakeComplete(peer, wall: wall)
            peer.timers.zeroKeyMaterial = now + timing.rejectAfterTime * 3
            peer.timers.newHandshake = nil
            authenticatedTraversal(peer, now: now)
            let before = output.count
            sendStaged(peer, now: now)
            if output.count == before, let keepalive = transportDatagram([], peer: peer, now: now) {
                // Confirms the session to the responder, which waits for a first packet.
                output.append(keepalive)
            }
            let sent = Array(output[before...])
            output.removeSubrange(before...)
            return .control(sent)
        }
    }
}
