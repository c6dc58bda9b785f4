import Addresses

/// TUN -> network: cryptokey routing of outgoing packets, transport messages, packets staged
/// until a session exists.
extension Engine {
    /// What the locked part of `encapsulate` decides; the encryption runs after the lock.
    private enum SendStep {
        case done(Outbound)
        case seal(Keypair, counter: UInt64, padded: Int, to: Endpoint)
    }

    /// Encrypts the IP packet at `buffer[packet]` in place into a transport message that
    /// starts 16 bytes before it. Steady state: one lock, no allocation.
    public func encapsulate(buffer: UnsafeMutableRawBufferPointer, packet: Range<Int>, now: Timestamp, wall: WallClock) -> Outbound {
        var pending: PendingSeal?
        let result = encapsulate(buffer: buffer, packet: packet, now: now, wall: wall, deferring: &pending)
        pending?.seal()
        return result
    }

    /// The same, but the encryption is left to the caller, who may run it on another
    /// thread: on `.send`, `seal` holds it, and the datagram is ready once it is done.
    /// Datagrams go out in the order of these calls (their counters are in that order).
    public func encapsulate(buffer: UnsafeMutableRawBufferPointer, packet: Range<Int>, now: Timestamp, wall: WallClock,
                            deferring seal: inout PendingSeal?) -> Outbound {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[packet])
        guard let destination = IPHeader.destination(bytes) else { return .drop(count(.malformed)) }
        let step: SendStep = lock.with {
            guard let id = routes.lookup(destination), let peer = peers[id] else { return .done(.drop(countLocked(.noRoute))) }
            guard let keypair = peer.current, let endpoint = peer.configuration.endpoint,
                  now.since(keypair.createdAt) < timing.rejectAfterTime else {
                return .done(stage(Array(bytes), peer: peer, now: now, wall: wall))
            }
            let counter = keypair.sendCounter.wrappingAdd(1, ordering: .relaxed).oldValue
            guard counter < timing.rejectAfterMessages else { return .done(stage(Array(bytes), peer: peer, now: now, wall: wall)) }
            let padded = min(Self.paddedLength(packet.count, mtu: mtu), buffer.count - packet.lowerBound - AEAD.tagSize)
            peer.txBytes &+= UInt64(padded + 32)
            dataSent(peer, now: now)
            if keypair.isInitiator && (counter >= timing.rekeyAfterMessages || now.since(keypair.createdAt) >= timing.rekeyAfterTime) {
                initiate(peer, now: now, wall: wall, retry: false)
            }
            return .seal(keypair, counter: counter, padded: padded, to: endpoint)
        }
        switch step {
        case let .done(result):
            return result
        case let .seal(keypair, counter, padded, endpoint):
            seal = prepareTransport(buffer: buffer, payloadStart: packet.lowerBound, length: packet.count, padded: padded, keypair: keypair, counter: counter)
            return .send((packet.lowerBound - MessageSize.transportHeader)..<(packet.lowerBound + padded + AEAD.tagSize), to: endpoint)
        }
    }

    @inline(__always)
    /// Plaintext is padded to a multiple of 16, but (as wireguard-go and the kernel do) never
    /// past the MTU, so a full-sized packet keeps the outer datagram within the path MTU.
    static func paddedLength(_ length: Int, mtu: Int) -> Int {
        max(length, min((length + 15) & ~15, mtu))
    }

    /// Pads the payload and writes the header; the encryption is returned, to run anywhere.
    @inline(__always)
    private func prepareTransport(buffer: UnsafeMutableRawBufferPointer, payloadStart: Int, length: Int, padded: Int,
                                  keypair: Keypair, counter: UInt64) -> PendingSeal {
        let base = buffer.baseAddress!
        if padded > length { (base + payloadStart + length).initializeMemory(as: UInt8.self, repeating: 0, count: padded - length) }
        let header = base + payloadStart - MessageSize.transportHeader
        header.storeBytes(of: UInt32(MessageType.transport.rawValue).littleEndian, as: UInt32.self)
        (header + 4).storeBytes(of: keypair.remoteIndex.littleEndian, toByteOffset: 0, as: UInt32.self)
        (header + 8).storeBytes(of: counter.littleEndian, toByteOffset: 0, as: UInt64.self)
        return PendingSeal(keypair: keypair, counter: counter, payload: base + payloadStart, length: padded)
    }

    private func writeTransport(buffer: UnsafeMutableRawBufferPointer, payloadStart: Int, length: Int, padded: Int, keypair: Keypair, counter: UInt64) {
        prepareTransport(buffer: buffer, payloadStart: payloadStart, length: length, padded: padded, keypair: keypair, counter: counter).seal()
    }

    /// A transport message as a fresh array (keepalives and staged packets: the cold path).
    /// Lock held.
    func transportDatagram(_ payload: [UInt8], peer: Peer, now: Timestamp) -> Datagram? {
        guard let keypair = peer.current, let endpoint = peer.configuration.endpoint,
              now.since(keypair.createdAt) < timing.rejectAfterTime else { return nil }
        let counter = keypair.sendCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        guard counter < timing.rejectAfterMessages else { return nil }
        let padded = (payload.count + 15) & ~15
        var message = [UInt8](repeating: 0, count: MessageSize.transportHeader + padded + AEAD.tagSize)
        message.replaceSubrange(MessageSize.transportHeader..<(MessageSize.transportHeader + payload.count), with: payload)
        message.withUnsafeMutableBytes {
            writeTransport(buffer: $0, payloadStart: MessageSize.transportHeader, length: payload.count, padded: padded, keypair: keypair, counter: counter)
        }
        peer.txBytes &+= UInt64(message.count)
        anyAuthenticatedPacketSent(peer, now: now)
        return Datagram(bytes: message, to: endpoint)
    }

    /// Keeps the packet for when a session exists and starts a handshake. Lock held.
    func stage(_ packet: [UInt8], peer: Peer, now: Timestamp, wall: WallClock) -> Outbound {
        if peer.staged.count >= timing.stagedPackets {
            peer.staged.removeFirst()
            drops[.queueFull, default: 0] += 1
        }
        peer.staged.append(packet)
        guard peer.configuration.endpoint != nil else { return .queued(handshake: []) }
        let before = output.count
        initiate(peer, now: now, wall: wall, retry: false)
        let sent = Array(output[before...])
        output.removeSubrange(before...)
        return .queued(handshake: sent)
    }

    /// Sends what waited for the session that now exists. Lock held.
    func sendStaged(_ peer: Peer, now: Timestamp) {
        let staged = peer.staged
        peer.staged = []
        for packet in staged {
            if let d = transportDatagram(packet, peer: peer, now: now) { output.append(d) }
        }
        // A staged keepalive (empty) is not data: nothing must answer it.
        if staged.contains(where: { !$0.isEmpty }) { dataSent(peer, now: now) }
    }

    /// A keepalive to the peer now, as wireguard-go and the kernel send one when persistent
    /// keepalive is switched on (so a peer behind NAT is reachable before it sends anything):
    /// over the current session, or once the handshake it starts completes. The datagrams
    /// come out of `drainOutput`.
    public func keepalive(_ key: PublicKey, now: Timestamp, wall: WallClock) {
        lock.with {
            guard let id = peerByKey[key], let peer = peers[id] else { return }
            if let datagram = transportDatagram([], peer: peer, now: now) {
                output.append(datagram)
            } else if case let .queued(handshake) = stage([], peer: peer, now: now, wall: wall) {
                output += handshake
            }
        }
    }

    /// Datagrams that became sendable as a side effect (staged packets after a handshake,
    /// rekeys triggered by traffic): the device sends them after each batch.
    public func drainOutput() -> [Datagram] {
        lock.with {
            let out = output
            output = []
            return out
        }
    }
}
