import Addresses
/// The cryptography of one transport message, split from the engine's bookkeeping so that a
/// batch's messages can be encrypted or decrypted on several threads at once: the engine
/// decides (under its lock, in the batch's order) which session, counter and destination a
/// message gets, the work below runs anywhere, and for received messages the engine
/// accepts them afterwards, again in order. Keeping both engine steps in arrival order is
/// what keeps a peer's packets in order whatever thread did the cryptography.

/// A transport message whose header is written and counter reserved, its payload still to
/// encrypt in place. Holds the session's keys alive until it is sealed.
public struct PendingSeal {
    let keypair: Keypair
    let counter: UInt64
    let payload: UnsafeMutableRawPointer
    public let length: Int

    /// Encrypts the payload in place and writes the tag after it. Thread-safe: a session's
    /// keys are immutable and each message owns its memory.
    @inline(__always)
    public func seal() {
        keypair.sendKey.withUnsafeBytes { key in
            AEAD.seal(key: key.baseAddress!, counter: counter, data: payload, length: length)
        }
    }
}

/// A received transport message whose session is found, still to decrypt (`open`) and then
/// to hand back to `Engine.accept` in arrival order.
public struct PendingOpen: Sendable {
    let keypair: Keypair
    let counter: UInt64
    let datagram: Range<Int>
    let source: Endpoint
    /// Bytes to decrypt.
    public var length: Int { datagram.count - MessageSize.transportHeader }
    /// Set by `open`: the tag held.
    public private(set) var authentic = false

    /// Decrypts in place (thread-safe, like `PendingSeal.seal`).
    @inline(__always)
    public mutating func open(in buffer: UnsafeMutableRawBufferPointer) {
        let start = datagram.lowerBound + MessageSize.transportHeader
        let sealedLength = datagram.count - MessageSize.transportHeader
        let counter = counter
        authentic = keypair.receiveKey.withUnsafeBytes { key in
            AEAD.open(key: key.baseAddress!, counter: counter, data: buffer.baseAddress! + start, length: sealedLength)
        }
    }
}
