import Addresses
import Monotonic

/// Network -> TUN with the lock held: a transport message's session, then its replay
/// window, the session's confirmation, the endpoint and cryptokey routing; cookie replies.
extension EngineState {
    mutating func findSession(receiver: UInt32, counter: UInt64, datagram: Range<Int>, from source: Endpoint, now: MonotonicInstant) -> Engine.InboundStep {
        guard case let .keypair(keypair)? = indices[receiver] else { return .done(.drop(count(.unknownPeer))) }
        guard now.since(keypair.createdAt) < timing.rejectAfterTime else { return .done(.drop(count(.noSession))) }
        return .open(PendingOpen(keypair: keypair, counter: counter, datagram: datagram, source: source))
    }

    mutating func finishReceiving(_ pending: PendingOpen, plaintext borrowed: BorrowedBytes, payloadStart: Int,
                                  now: MonotonicInstant, wall: WallClock) -> Engine.Inbound {
        let keypair = pending.keypair, plaintext = borrowed.bytes
        guard keypair.replay.accept(pending.counter, limit: timing.rejectAfterMessages) else { return .drop(count(.replay)) }
        let peer = keypair.peer
        guard peers[peer.id] === peer else { return .drop(count(.unknownPeer)) }
        if peer.next === keypair {
            // The initiator used the session: it is now confirmed on our side too.
            if let old = peer.previous { indices[old.localIndex] = nil }
            peer.previous = peer.current
            peer.current = keypair
            peer.next = nil
            handshakeComplete(peer, now: now, wall: wall)
            sendStaged(peer, now: now)
        }
        peer.configuration.endpoint = pending.source
        peer.rxBytes &+= UInt64(pending.datagram.count)
        peer.timers.newHandshake = nil
        authenticatedTraversal(peer, now: now)
        if keypair.isInitiator, !peer.rekeyRequestedOnReceive, peer.current === keypair,
           now.since(keypair.createdAt) >= timing.rejectAfterTime.minus(timing.keepaliveTimeout).minus(timing.rekeyTimeout) {
            peer.rekeyRequestedOnReceive = true
            initiate(peer, now: now, wall: wall, retry: false)
        }
        if plaintext.isEmpty { return .keepalive }
        guard let (sourceAddress, length) = IPHeader.sourceAndLength(plaintext) else { return .drop(count(.malformed)) }
        guard routes.lookup(sourceAddress) == peer.id else { return .drop(count(.notAllowedIP)) }
        dataReceived(peer, now: now)
        return .deliver(payloadStart..<(payloadStart + length))
    }

    mutating func receiveCookieReply(_ m: [UInt8], now: MonotonicInstant) -> Engine.Inbound {
        let receiver = m.withUnsafeBytes { WireFormat.readUInt32($0, 4) }
        let peer: Peer
        switch indices[receiver] {
        case let .handshake(p)?: peer = p
        case let .keypair(k)?: peer = k.peer
        case nil: return .drop(count(.unknownPeer))
        }
        guard peer.cookies.consume(reply: m, now: now) else { return .drop(count(.badMAC)) }
        if peer.pending != nil { peer.reconnect.cookieReceived() }
        return .control([])
    }
}
