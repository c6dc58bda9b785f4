import Addresses
import Monotonic

/// Handshake messages in: each is admitted under the lock (EngineState+Handshakes), its
/// Diffie-Hellman work runs after it, and its result is taken in under the lock again.
extension Engine {
    func receiveInitiation(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: MonotonicInstant, wall: WallClock) -> Inbound {
        let admission: EngineState.Admission<(PrivateKey, PublicKey)> = state.withLock { s in
            guard let privateKey = s.privateKey, let publicKey = s.publicKey else { return .refused(.drop(s.count(.unknownPeer))) }
            if let answer = s.admit(m, from: source, underLoad: underLoad, now: now) { return .refused(answer) }
            return .admitted((privateKey, publicKey))
        }
        let privateKey: PrivateKey, publicKey: PublicKey
        switch admission {
        case let .refused(answer): return answer
        case let .admitted(keys): (privateKey, publicKey) = keys
        }
        var unknown = false
        guard let consumed = HandshakeCodec.consumeInitiation(m, local: privateKey, localPublic: publicKey, staticShared: { key in
            let shared = self.state.withLock { s in s.peerByKey[key].flatMap { s.peers[$0]?.staticShared } }
            unknown = shared == nil
            return shared
        }) else { return .drop(count(unknown ? .unknownPeer : .badMAC)) }
        return state.withLock { $0.acceptInitiation(consumed, from: source, now: now) }
    }

    func receiveResponse(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: MonotonicInstant, wall: WallClock) -> Inbound {
        let receiver = m.withUnsafeBytes { WireFormat.readUInt32($0, 8) }
        let admission: EngineState.Admission<(PrivateKey, Peer, PendingInitiation, [UInt8])> = state.withLock { s in
            guard let privateKey = s.privateKey else { return .refused(.drop(s.count(.unknownPeer))) }
            if let answer = s.admit(m, from: source, underLoad: underLoad, now: now) { return .refused(answer) }
            guard case let .handshake(peer)? = s.indices[receiver], let pending = peer.pending, pending.senderIndex == receiver else {
                return .refused(.drop(s.count(.unknownPeer)))
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
        let remoteIndex = m.withUnsafeBytes { WireFormat.readUInt32($0, 4) }
        return state.withLock {
            $0.acceptResponse(send: keys.send, receive: keys.receive, peer: peer, localIndex: receiver, remoteIndex: remoteIndex,
                              from: source, now: now, wall: wall)
        }
    }
}
