import Monotonic
import Synchronization

/// One session's transport keys. The send counter is reserved atomically so encryption
/// runs outside the engine's lock; the receive window is guarded by the lock.
final class Keypair: @unchecked Sendable {
    let sendKey: SecretBytes
    let receiveKey: SecretBytes
    let localIndex: UInt32
    let remoteIndex: UInt32
    let createdAt: MonotonicInstant
    let isInitiator: Bool
    let sendCounter = Atomic<UInt64>(0)
    var replay = ReplayWindow()
    unowned let peer: Peer

    init(send: [UInt8], receive: [UInt8], localIndex: UInt32, remoteIndex: UInt32, createdAt: MonotonicInstant, isInitiator: Bool, peer: Peer) {
        sendKey = SecretBytes(send)
        receiveKey = SecretBytes(receive)
        self.localIndex = localIndex
        self.remoteIndex = remoteIndex
        self.createdAt = createdAt
        self.isInitiator = isInitiator
        self.peer = peer
    }
}
