import Addresses

/// Network -> TUN: a received datagram is classified, a transport message finds its session,
/// is opened (on any thread) and finished in arrival order; handshake messages go to
/// Engine+Handshakes.
extension Engine {
    public func decapsulate(buffer: UnsafeMutableRawBufferPointer, datagram: Range<Int>, from source: Endpoint,
                            underLoad: Bool, now: Timestamp, wall: WallClock) -> Inbound {
        switch beginDecapsulating(buffer: buffer, datagram: datagram, from: source, underLoad: underLoad, now: now, wall: wall) {
        case let .done(result):
            return result
        case var .open(pending):
            pending.open(in: buffer)
            return finishDecapsulating(pending, buffer: buffer, now: now, wall: wall)
        }
    }

    public enum InboundStep {
        /// A transport message of a known session: decrypt it (`PendingOpen.open`, on any
        /// thread), then hand it to `finishDecapsulating`, in arrival order.
        case open(PendingOpen)
        /// Handled (handshakes, cookies) or dropped.
        case done(Inbound)
    }

    /// The first step of `decapsulate`, in arrival order: a transport message's session is
    /// looked up; any other message is handled whole (so a response is processed before the
    /// transport messages behind it look for its session).
    public func beginDecapsulating(buffer: UnsafeMutableRawBufferPointer, datagram: Range<Int>, from source: Endpoint,
                                   underLoad: Bool, now: Timestamp, wall: WallClock) -> InboundStep {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[datagram])
        switch WireFormat.classify(bytes) {
        case let .failure(reason):
            return .done(.drop(count(reason)))
        case .success(.transport):
            return findSession(buffer: buffer, datagram: datagram, from: source, now: now)
        case .success(.initiation):
            return .done(receiveInitiation(Array(bytes), from: source, underLoad: underLoad, now: now, wall: wall))
        case .success(.response):
            return .done(receiveResponse(Array(bytes), from: source, underLoad: underLoad, now: now, wall: wall))
        case .success(.cookieReply):
            return .done(receiveCookieReply(Array(bytes), now: now))
        }
    }

    private func findSession(buffer: UnsafeMutableRawBufferPointer, datagram: Range<Int>, from source: Endpoint, now: Timestamp) -> InboundStep {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[datagram])
        let receiver = WireFormat.readUInt32(bytes, 4)
        let counter = WireFormat.readUInt64(bytes, 8)
        return lock.with {
            guard case let .keypair(keypair)? = indices[receiver] else { return .done(.drop(countLocked(.unknownPeer))) }
            guard now.since(keypair.createdAt) < timing.rejectAfterTime else { return .done(.drop(countLocked(.noSession))) }
            return .open(PendingOpen(keypair: keypair, counter: counter, datagram: datagram, source: source))
        }
    }

    /// The last step, in arrival order: the replay window, the session and endpoint
    /// bookkeeping, and cryptokey routing of the decrypted packet.
    public func finishDecapsulating(_ pending: PendingOpen, buffer: UnsafeMutableRawBufferPointer, now: Timestamp, wall: WallClock) -> Inbound {
        let keypair = pending.keypair, counter = pending.counter, datagram = pending.datagram, source = pending.source
        guard pending.authentic else { return .drop(count(.badMAC)) }
        let payloadStart = datagram.lowerBound + MessageSize.transportHeader
        let sealedLength = datagram.count - MessageSize.transportHeader
        let plaintext = UnsafeRawBufferPointer(rebasing: buffer[payloadStart..<(payloadStart + sealedLength - AEAD.tagSize)])
        return lock.with {
            guard keypair.replay.accept(counter, limit: timing.rejectAfterMessages) else { return .drop(countLocked(.replay)) }
            let peer = keypair.peer
            guard peers[peer.id] === peer else { return .drop(countLocked(.unknownPeer)) }
            if peer.next === keypair {
                // The initiator used the session: it is now confirmed on our side too.
                if let old = peer.previous { indices[old.localIndex] = nil }
                peer.previous = peer.current
                peer.current = keypair
                peer.next = nil
                handshakeComplete(peer, wall: wall)
                sendStaged(peer, now: now)
            }
            peer.configuration.endpoint = source
            peer.rxBytes &+= UInt64(datagram.count)
            peer.timers.newHandshake = nil
            authenticatedTraversal(peer, now: now)
            if keypair.isInitiator, !peer.rekeyRequestedOnReceive, peer.current === keypair,
               now.since(keypair.createdAt) >= timing.rejectAfterTime.minus(timing.keepaliveTimeout).minus(timing.rekeyTimeout) {
                peer.rekeyRequestedOnReceive = true
                initiate(peer, now: now, wall: wall, retry: false)
            }
            if plaintext.isEmpty { return .keepalive }
            guard let (sourceAddress, length) = IPHeader.sourceAndLength(plaintext) else { return .drop(countLocked(.malformed)) }
            guard routes.lookup(sourceAddress) == peer.id else { return .drop(countLocked(.notAllowedIP)) }
            dataReceived(peer, now: now)
            return .deliver(payloadStart..<(payloadStart + length))
        }
    }

    private func receiveCookieReply(_ m: [UInt8], now: Timestamp) -> Inbound {
        let receiver = m.withUnsafeBytes { WireFormat.readUInt32($0, 4) }
        return lock.with {
            let peer: Peer
            switch indices[receiver] {
            case let .handshake(p)?: peer = p
            case let .keypair(k)?: peer = k.peer
            case nil: return .drop(countLocked(.unknownPeer))
            }
            guard peer.cookies.consume(reply: m, now: now) else { return .drop(countLocked(.badMAC)) }
            if peer.pending != nil { peer.reconnect.cookieReceived() }
            return .control([])
        }
    }
}
