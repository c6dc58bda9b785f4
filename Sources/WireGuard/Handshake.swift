import Monotonic

/// Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s as WireGuard uses it: the initiator sends its
/// static key and a timestamp encrypted to the responder's static key; the responder
/// answers with its ephemeral; both derive the transport keys from the chaining key.
enum Noise {
    static let construction = Array("Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s".utf8)
    static let identifier = Array("WireGuard v1 zx2c4 Jason@zx2c4.com".utf8)
    static let labelMAC1 = Array("mac1----".utf8)
    static let labelCookie = Array("cookie--".utf8)
    static let initialChainingKey = Blake2s.hash(construction)
    static let initialHash = Blake2s.hash(initialChainingKey, identifier)

    /// The chaining key and hash at some point of the handshake. A class, so the secret
    /// bytes are never silently copied, and wiped when the handshake state is dropped;
    /// `copy()` where a failed attempt must leave the original intact.
    final class State {
        var chainingKey: [UInt8]
        var hash: [UInt8]

        init(responderStatic: PublicKey) {
            chainingKey = Noise.initialChainingKey
            hash = Blake2s.hash(Noise.initialHash, responderStatic.bytes)
        }

        private init(chainingKey: [UInt8], hash: [UInt8]) {
            self.chainingKey = chainingKey
            self.hash = hash
        }

        deinit { wipe() }

        func copy() -> State { State(chainingKey: Array(chainingKey), hash: Array(hash)) }

        func mixHash(_ data: [UInt8]) { replace(&hash, with: Blake2s.hash(hash, data)) }

        func mixKey(_ input: [UInt8]) {
            var out = KDF.derive(1, key: chainingKey, input: input)
            replace(&chainingKey, with: out[0])
            Zero.wipe(&out[0])
        }

        /// (C, k) = KDF2(C, input)
        func mixKeyAndReturnKey(_ input: [UInt8]) -> [UInt8] {
            var out = KDF.derive(2, key: chainingKey, input: input)
            replace(&chainingKey, with: out[0])
            Zero.wipe(&out[0])
            return out[1]
        }

        func encryptAndHash(key: [UInt8], _ plaintext: [UInt8]) -> [UInt8] {
            let sealed = AEAD.seal(key: key, counter: 0, plaintext: plaintext, ad: hash)
            mixHash(sealed)
            return sealed
        }

        func decryptAndHash(key: [UInt8], _ ciphertext: [UInt8]) -> [UInt8]? {
            guard let opened = AEAD.open(key: key, counter: 0, ciphertext: ciphertext, ad: hash) else { return nil }
            mixHash(ciphertext)
            return opened
        }

        /// Overwrites in place, so the old value's bytes do not linger in freed memory.
        private func replace(_ target: inout [UInt8], with value: [UInt8]) {
            if target.count == value.count {
                target.withUnsafeMutableBytes { t in value.withUnsafeBytes { t.copyMemory(from: $0) } }
            } else {
                Zero.wipe(&target)
                target = value
            }
        }

        func wipe() {
            Zero.wipe(&chainingKey)
            Zero.wipe(&hash)
        }

        /// (send, receive) for the initiator; the responder swaps them.
        func transportKeys() -> ([UInt8], [UInt8]) {
            let out = KDF.derive(2, key: chainingKey, input: [])
            return (out[0], out[1])
        }
    }

    static func mac1Key(_ receiver: PublicKey) -> [UInt8] { Blake2s.hash(labelMAC1, receiver.bytes) }
    static func cookieKey(_ receiver: PublicKey) -> [UInt8] { Blake2s.hash(labelCookie, receiver.bytes) }
}

/// An initiation in flight (initiator side), kept until the response arrives.
/// Read outside the engine's lock only by `consumeResponse`, which copies its state; replaced,
/// never changed, under the lock.
struct PendingInitiation: @unchecked Sendable {
    var state: Noise.State
    var ephemeral: PrivateKey
    var senderIndex: UInt32
    var sentAt: MonotonicInstant
}

/// What a responder learns from a valid initiation.
/// Made by one thread and handed whole to the engine's lock.
struct ConsumedInitiation: @unchecked Sendable {
    var state: Noise.State
    var initiatorStatic: PublicKey
    var initiatorEphemeral: PublicKey
    var initiatorIndex: UInt32
    var timestamp: [UInt8]
}

enum HandshakeCodec {
    /// Builds an initiation (without MACs: bytes 116..<148 are zero) and the pending state.
    static func createInitiation(local: PrivateKey, localPublic: PublicKey, remote: PublicKey, staticShared: [UInt8],
                                 ephemeral: PrivateKey, senderIndex: UInt32, timestamp: [UInt8], now: MonotonicInstant) -> ([UInt8], PendingInitiation)? {
        let state = Noise.State(responderStatic: remote)
        let ephemeralPublic = ephemeral.publicKey
        state.mixHash(ephemeralPublic.bytes)
        state.mixKey(ephemeralPublic.bytes)
        guard var es = X25519.sharedSecret(ephemeral, remote) else { return nil }
        var key = state.mixKeyAndReturnKey(es)
        Zero.wipe(&es)
        let encryptedStatic = state.encryptAndHash(key: key, localPublic.bytes)
        var ss = staticShared
        key = state.mixKeyAndReturnKey(ss)
        Zero.wipe(&ss)
        let encryptedTimestamp = state.encryptAndHash(key: key, timestamp)
        Zero.wipe(&key)
        var message: [UInt8] = [MessageType.initiation.rawValue, 0, 0, 0]
        message += WireFormat.le32(senderIndex)
        message += ephemeralPublic.bytes
        message += encryptedStatic
        message += encryptedTimestamp
        message += [UInt8](repeating: 0, count: 32)
        return (message, PendingInitiation(state: state, ephemeral: ephemeral, senderIndex: senderIndex, sentAt: now))
    }

    /// Decrypts an initiation addressed to `local`; nil if it does not authenticate.
    static func consumeInitiation(_ m: [UInt8], local: PrivateKey, localPublic: PublicKey,
                                  staticShared: (PublicKey) -> [UInt8]?) -> ConsumedInitiation? {
        let state = Noise.State(responderStatic: localPublic)
        let initiatorIndex = m.withUnsafeBytes { WireFormat.readUInt32($0, 4) }
        guard let ephemeral = PublicKey(bytes: m[8..<40]) else { return nil }
        state.mixHash(ephemeral.bytes)
        state.mixKey(ephemeral.bytes)
        guard var es = X25519.sharedSecret(local, ephemeral) else { return nil }
        var key = state.mixKeyAndReturnKey(es)
        Zero.wipe(&es)
        guard let staticBytes = state.decryptAndHash(key: key, Array(m[40..<88])),
              let initiatorStatic = PublicKey(bytes: staticBytes),
              var ss = staticShared(initiatorStatic) else { return nil }
        key = state.mixKeyAndReturnKey(ss)
        Zero.wipe(&ss)
        guard let timestamp = state.decryptAndHash(key: key, Array(m[88..<116])) else { return nil }
        Zero.wipe(&key)
        return ConsumedInitiation(state: state, initiatorStatic: initiatorStatic, initiatorEphemeral: ephemeral,
                                  initiatorIndex: initiatorIndex, timestamp: timestamp)
    }

    /// Builds the response (without MACs) and the responder's transport keys (send, receive).
    static func createResponse(_ consumed: ConsumedInitiation, ephemeral: PrivateKey, initiatorStatic: PublicKey,
                               psk: [UInt8], senderIndex: UInt32) -> ([UInt8], send: [UInt8], receive: [UInt8])? {
        let state = consumed.state.copy()
        let ephemeralPublic = ephemeral.publicKey
        state.mixHash(ephemeralPublic.bytes)
        state.mixKey(ephemeralPublic.bytes)
        guard var ee = X25519.sharedSecret(ephemeral, consumed.initiatorEphemeral),
              var se = X25519.sharedSecret(ephemeral, initiatorStatic) else { return nil }
        state.mixKey(ee)
        state.mixKey(se)
        Zero.wipe(&ee)
        Zero.wipe(&se)
        var out = KDF.derive(3, key: state.chainingKey, input: psk)
        state.chainingKey = out[0]
        state.mixHash(out[1])
        let empty = state.encryptAndHash(key: out[2], [])
        for i in out.indices { Zero.wipe(&out[i]) }
        var message: [UInt8] = [MessageType.response.rawValue, 0, 0, 0]
        message += WireFormat.le32(senderIndex)
        message += WireFormat.le32(consumed.initiatorIndex)
        message += ephemeralPublic.bytes
        message += empty
        message += [UInt8](repeating: 0, count: 32)
        let (first, second) = state.transportKeys()
        state.wipe()
        return (message, send: second, receive: first)
    }

    /// Completes the initiator's side with a response; (send, receive) keys or nil.
    static func consumeResponse(_ m: [UInt8], pending: PendingInitiation, local: PrivateKey, psk: [UInt8]) -> (send: [UInt8], receive: [UInt8])? {
        // A copy: a forged response must not spoil the pending handshake for the real one.
        let state = pending.state.copy()
        guard let responderEphemeral = PublicKey(bytes: m[12..<44]) else { return nil }
        state.mixHash(responderEphemeral.bytes)
        state.mixKey(responderEphemeral.bytes)
        guard var ee = X25519.sharedSecret(pending.ephemeral, responderEphemeral),
              var se = X25519.sharedSecret(local, responderEphemeral) else { return nil }
        state.mixKey(ee)
        state.mixKey(se)
        Zero.wipe(&ee)
        Zero.wipe(&se)
        var out = KDF.derive(3, key: state.chainingKey, input: psk)
        state.chainingKey = out[0]
        state.mixHash(out[1])
        let opened = state.decryptAndHash(key: out[2], Array(m[44..<60]))
        for i in out.indices { Zero.wipe(&out[i]) }
        guard opened != nil else { return nil }
        let (first, second) = state.transportKeys()
        state.wipe()
        return (send: first, receive: second)
    }
}
