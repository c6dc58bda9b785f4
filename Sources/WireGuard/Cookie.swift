import Addresses
import Monotonic
/// MAC1 proves the sender knows our public key; MAC2 proves it can receive at its source
/// address (it got our cookie). Under load a responder answers initiations without a
/// valid MAC2 with a cookie reply instead of doing Diffie-Hellman.
struct CookieChecker {
    private let mac1Key: [UInt8]
    private let cookieKey: [UInt8]
    private var secret: [UInt8]
    private var secretSetAt: MonotonicInstant?
    private let random: any RandomSource
    private let lifetime: MonotonicInstant.Duration

    init(localPublic: PublicKey, random: any RandomSource, lifetime: MonotonicInstant.Duration) {
        mac1Key = Noise.mac1Key(localPublic)
        cookieKey = Noise.cookieKey(localPublic)
        secret = random.bytes(32)
        self.random = random
        self.lifetime = lifetime
    }

    func checkMAC1(_ m: [UInt8]) -> Bool {
        let offset = m.count - 32
        return Blake2s.mac(key: mac1Key, m[0..<offset]) == Array(m[offset..<(offset + 16)])
    }

    mutating func cookie(for source: Endpoint, now: MonotonicInstant) -> [UInt8] {
        if secretSetAt == nil || now.since(secretSetAt!) > lifetime {
            Zero.wipe(&secret)
            secret = random.bytes(32)
            secretSetAt = now
        }
        return Blake2s.mac(key: secret, source.address.bytes + [UInt8(source.port >> 8), UInt8(source.port & 0xff)])
    }

    mutating func checkMAC2(_ m: [UInt8], source: Endpoint, now: MonotonicInstant) -> Bool {
        let offset = m.count - 16
        return Blake2s.mac(key: cookie(for: source, now: now), m[0..<offset]) == Array(m[offset...])
    }

    /// The cookie reply to message `m` (whose sender index is at bytes 4..<8).
    mutating func reply(to m: [UInt8], source: Endpoint, now: MonotonicInstant) -> [UInt8] {
        let nonce = random.bytes(24)
        let mac1 = Array(m[(m.count - 32)..<(m.count - 16)])
        let sealed = AEAD.xseal(key: cookieKey, nonce: nonce, plaintext: cookie(for: source, now: now), ad: mac1)
        return [MessageType.cookieReply.rawValue, 0, 0, 0] + Array(m[4..<8]) + nonce + sealed
    }
}

/// The sending side of MACs for one peer: remembers the last MAC1 sent (a cookie reply
/// is bound to it) and the cookie received, for 120 seconds.
struct CookieGenerator {
    private let mac1Key: [UInt8]
    private let cookieKey: [UInt8]
    private var lastMAC1: [UInt8]?
    private var cookie: [UInt8]?
    private var cookieSetAt: MonotonicInstant?
    private let lifetime: MonotonicInstant.Duration

    init(remote: PublicKey, lifetime: MonotonicInstant.Duration) {
        mac1Key = Noise.mac1Key(remote)
        cookieKey = Noise.cookieKey(remote)
        self.lifetime = lifetime
    }

    /// Fills the last 32 bytes of `m` with MAC1 and (if a fresh cookie is held) MAC2.
    mutating func addMACs(_ m: inout [UInt8], now: MonotonicInstant) {
        let offset = m.count - 32
        let mac1 = Blake2s.mac(key: mac1Key, m[0..<offset])
        m.replaceSubrange(offset..<(offset + 16), with: mac1)
        lastMAC1 = mac1
        if let cookie, let at = cookieSetAt, now.since(at) < lifetime {
            m.replaceSubrange((offset + 16)..<(offset + 32), with: Blake2s.mac(key: cookie, m[0..<(offset + 16)]))
        } else {
            m.replaceSubrange((offset + 16)..<(offset + 32), with: [UInt8](repeating: 0, count: 16))
        }
    }

    /// Takes the cookie from a reply; false when it does not decrypt (forged, or not for our last message).
    mutating func consume(reply m: [UInt8], now: MonotonicInstant) -> Bool {
        guard let lastMAC1,
              let opened = AEAD.xopen(key: cookieKey, nonce: Array(m[8..<32]), ciphertext: Array(m[32..<64]), ad: lastMAC1) else { return false }
        cookie = opened
        cookieSetAt = now
        return true
    }
}
