import Addresses
import Monotonic

/// Network -> TUN: a received datagram is classified, a transport message finds its session,
/// is opened (on any thread) and finished in arrival order; handshake messages go to
/// Engine+Handshakes. The locked steps are EngineState+Receive's.
extension Engine {
    public func decapsulate(buffer: UnsafeMutableRawBufferPointer, datagram: Range<Int>, from source: Endpoint,
                            underLoad: Bool, now: MonotonicInstant, wall: WallClock) -> Inbound {
        switch beginDecapsulating(buffer: buffer, datagram: datagram, from: source, underLoad: underLoad, now: now, wall: wall) {
        case let .done(result):
            return result
        case var .open(pending):
            pending.open(in: buffer)
            return finishDecapsulating(pending, buffer: buffer, now: now, wall: wall)
        }
    }

    public enum InboundStep: Sendable {
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
                                   underLoad: Bool, now: MonotonicInstant, wall: WallClock) -> InboundStep {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[datagram])
        switch WireFormat.classify(bytes) {
        case let .failure(reason):
            return .done(.drop(count(reason)))
        case .success(.transport):
            let receiver = WireFormat.readUInt32(bytes, 4)
            let counter = WireFormat.readUInt64(bytes, 8)
            return state.withLock { $0.findSession(receiver: receiver, counter: counter, datagram: datagram, from: source, now: now) }
        case .success(.initiation):
            return .done(receiveInitiation(Array(bytes), from: source, underLoad: underLoad, now: now, wall: wall))
        case .success(.response):
            return .done(receiveResponse(Array(bytes), from: source, underLoad: underLoad, now: now, wall: wall))
        case .success(.cookieReply):
            let message = Array(bytes)
            return .done(state.withLock { $0.receiveCookieReply(message, now: now) })
        }
    }

    /// The last step, in arrival order: the replay window, the session and endpoint
    /// bookkeeping, and cryptokey routing of the decrypted packet.
    public func finishDecapsulating(_ pending: PendingOpen, buffer: UnsafeMutableRawBufferPointer, now: MonotonicInstant, wall: WallClock) -> Inbound {
        guard pending.authentic else { return .drop(count(.badMAC)) }
        let payloadStart = pending.datagram.lowerBound + MessageSize.transportHeader
        let sealedLength = pending.datagram.count - MessageSize.transportHeader
        let plaintext = UnsafeRawBufferPointer(rebasing: buffer[payloadStart..<(payloadStart + sealedLength - AEAD.tagSize)])
        let borrowed = BorrowedBytes(bytes: plaintext)
        return state.withLock { $0.finishReceiving(pending, plaintext: borrowed, payloadStart: payloadStart, now: now, wall: wall) }
    }
}
