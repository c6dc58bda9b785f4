import Addresses
import Monotonic

/// TUN -> network: an outgoing packet's peer and session are found under the lock
/// (EngineState+Send), its encryption runs after it.
extension Engine {
    /// Encrypts the IP packet at `buffer[packet]` in place into a transport message that
    /// starts 16 bytes before it. Steady state: one lock, no allocation.
    public func encapsulate(buffer: UnsafeMutableRawBufferPointer, packet: Range<Int>, now: MonotonicInstant, wall: WallClock) -> Outbound {
        var pending: PendingSeal?
        let result = encapsulate(buffer: buffer, packet: packet, now: now, wall: wall, deferring: &pending)
        pending?.seal()
        return result
    }

    /// The same, but the encryption is left to the caller, who may run it on another
    /// thread: on `.send`, `seal` holds it, and the datagram is ready once it is done.
    /// Datagrams go out in the order of these calls (their counters are in that order).
    public func encapsulate(buffer: UnsafeMutableRawBufferPointer, packet: Range<Int>, now: MonotonicInstant, wall: WallClock,
                            deferring seal: inout PendingSeal?) -> Outbound {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[packet])
        guard let destination = IPHeader.destination(bytes) else { return .drop(count(.malformed)) }
        let room = buffer.count - packet.lowerBound - AEAD.tagSize
        let mtu = self.mtu
        let packetBytes = BorrowedBytes(bytes: bytes), destinationBytes = BorrowedBytes(bytes: destination)
        let step = state.withLock {
            $0.sendStep(packetBytes, to: destinationBytes, length: packet.count, room: room, mtu: mtu, now: now, wall: wall)
        }
        switch step {
        case let .done(result):
            return result
        case let .seal(keypair, counter, padded, endpoint):
            seal = Self.prepareTransport(buffer: buffer, payloadStart: packet.lowerBound, length: packet.count, padded: padded,
                                         keypair: keypair, counter: counter)
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
    static func prepareTransport(buffer: UnsafeMutableRawBufferPointer, payloadStart: Int, length: Int, padded: Int,
                                 keypair: Keypair, counter: UInt64) -> PendingSeal {
        let base = buffer.baseAddress!
        if padded > length { (base + payloadStart + length).initializeMemory(as: UInt8.self, repeating: 0, count: padded - length) }
        let header = base + payloadStart - MessageSize.transportHeader
        header.storeBytes(of: UInt32(MessageType.transport.rawValue).littleEndian, as: UInt32.self)
        (header + 4).storeBytes(of: keypair.remoteIndex.littleEndian, toByteOffset: 0, as: UInt32.self)
        (header + 8).storeBytes(of: counter.littleEndian, toByteOffset: 0, as: UInt64.self)
        return PendingSeal(keypair: keypair, counter: counter, payload: base + payloadStart, length: padded)
    }

    /// A keepalive to the peer now, as wireguard-go and the kernel send one when persistent
    /// keepalive is switched on (so a peer behind NAT is reachable before it sends anything):
    /// over the current session, or once the handshake it starts completes. The datagrams
    /// come out of `drainOutput`.
    public func keepalive(_ key: PublicKey, now: MonotonicInstant, wall: WallClock) {
        state.withLock { $0.keepalive(key, now: now, wall: wall) }
    }

    /// Datagrams that became sendable as a side effect (staged packets after a handshake,
    /// rekeys triggered by traffic): the device sends them after each batch.
    public func drainOutput() -> [Datagram] {
        state.withLock { $0.drainOutput() }
    }
}
