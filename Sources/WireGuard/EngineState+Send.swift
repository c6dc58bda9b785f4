import Addresses
import Monotonic

/// TUN -> network with the lock held: cryptokey routing, the send counter, packets staged
/// until a session exists, transport messages of the cold path.
extension EngineState {
    /// What the locked part of `Engine.encapsulate` decides; the encryption runs after it.
    enum SendStep: Sendable {
        case done(Engine.Outbound)
        case seal(Keypair, counter: UInt64, padded: Int, to: Endpoint)
    }

    /// `room`: the bytes the buffer has after the packet's start, less the tag.
    mutating func sendStep(_ packet: BorrowedBytes, to destination: BorrowedBytes, length: Int, room: Int,
                           mtu: Int, now: MonotonicInstant, wall: WallClock) -> SendStep {
        let bytes = packet.bytes
        guard let id = routes.lookup(destination.bytes), let peer = peers[id] else { return .done(.drop(count(.noRoute))) }
        guard let keypair = peer.current, let endpoint = peer.configuration.endpoint,
              now.since(keypair.createdAt) < timing.rejectAfterTime else {
            return .done(stage(Array(bytes), peer: peer, now: now, wall: wall))
        }
        let counter = keypair.sendCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        guard counter < timing.rejectAfterMessages else { return .done(stage(Array(bytes), peer: peer, now: now, wall: wall)) }
        let padded = min(Engine.paddedLength(length, mtu: mtu), room)
        peer.txBytes &+= UInt64(padded + 32)
        dataSent(peer, now: now)
        if keypair.isInitiator && (counter >= timing.rekeyAfterMessages || now.since(keypair.createdAt) >= timing.rekeyAfterTime) {
            initiate(peer, now: now, wall: wall, retry: false)
        }
        return .seal(keypair, counter: counter, padded: padded, to: endpoint)
    }

    /// A transport message as a fresh array (keepalives and staged packets: the cold path).
    mutating func transportDatagram(_ payload: [UInt8], peer: Peer, now: MonotonicInstant) -> Datagram? {
        guard let keypair = peer.current, let endpoint = peer.configuration.endpoint,
              now.since(keypair.createdAt) < timing.rejectAfterTime else { return nil }
        let counter = keypair.sendCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        guard counter < timing.rejectAfterMessages else { return nil }
        let padded = (payload.count + 15) & ~15
        var message = [UInt8](repeating: 0, count: MessageSize.transportHeader + padded + AEAD.tagSize)
        message.replaceSubrange(MessageSize.transportHeader..<(MessageSize.transportHeader + payload.count), with: payload)
        message.withUnsafeMutableBytes {
            Engine.prepareTransport(buffer: $0, payloadStart: MessageSize.transportHeader, length: payload.count, padded: padded,
                                    keypair: keypair, counter: counter).seal()
        }
        peer.txBytes &+= UInt64(message.count)
        anyAuthenticatedPacketSent(peer, now: now)
        return Datagram(bytes: message, to: endpoint)
    }

    /// Keeps the packet for when a session exists and starts a handshake.
    mutating func stage(_ packet: [UInt8], peer: Peer, now: MonotonicInstant, wall: WallClock) -> Engine.Outbound {
        if peer.staged.count >= timing.stagedPackets {
            peer.staged.removeFirst()
            drops[.queueFull, default: 0] += 1
        }
        peer.staged.append(packet)
        guard peer.configuration.endpoint != nil else { return .queued(handshake: []) }
        let before = output.count
        initiate(peer, now: now, wall: wall, retry: false)
        return .queued(handshake: takeOutput(since: before))
    }

    /// Sends what waited for the session that now exists.
    mutating func sendStaged(_ peer: Peer, now: MonotonicInstant) {
        let staged = peer.staged
        peer.staged = []
        for packet in staged {
            if let d = transportDatagram(packet, peer: peer, now: now) { output.append(d) }
        }
        // A staged keepalive (empty) is not data: nothing must answer it.
        if staged.contains(where: { !$0.isEmpty }) { dataSent(peer, now: now) }
    }

    mutating func keepalive(_ key: PublicKey, now: MonotonicInstant, wall: WallClock) {
        guard let id = peerByKey[key], let peer = peers[id] else { return }
        if let datagram = transportDatagram([], peer: peer, now: now) {
            output.append(datagram)
        } else if case let .queued(handshake) = stage([], peer: peer, now: now, wall: wall) {
            output += handshake
        }
    }
}
