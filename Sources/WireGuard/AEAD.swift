import CSodium
import Monotonic

/// ChaCha20-Poly1305 (IETF) with WireGuard's nonce: 4 zero bytes, then the 64-bit counter
/// little-endian. In place on raw memory, so the data path allocates nothing.
public enum AEAD {
    public static let tagSize = 16

    /// 12 contiguous bytes on the stack: zero, then the counter's low and high words, little-endian.
    @inline(__always)
    static func nonce(_ counter: UInt64) -> (UInt32, UInt32, UInt32) {
        (0, UInt32(truncatingIfNeeded: counter).littleEndian, UInt32(truncatingIfNeeded: counter >> 32).littleEndian)
    }

    /// Encrypts `length` bytes at `data` in place and writes the tag right after them.
    @inline(__always)
    public static func seal(key: UnsafeRawPointer, counter: UInt64, data: UnsafeMutableRawPointer, length: Int,
                            ad: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        var n = nonce(counter)
        let p = data.assumingMemoryBound(to: UInt8.self)
        _ = withUnsafeBytes(of: &n) { nb in
            crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                p, p + length, nil, p, UInt64(length), ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                nil, nb.bindMemory(to: UInt8.self).baseAddress!, key.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Decrypts `length` bytes (tag included) at `data` in place; false if the tag is wrong.
    @inline(__always)
    public static func open(key: UnsafeRawPointer, counter: UInt64, data: UnsafeMutableRawPointer, length: Int,
                            ad: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) -> Bool {
        guard length >= tagSize else { return false }
        var n = nonce(counter)
        let p = data.assumingMemoryBound(to: UInt8.self)
        return withUnsafeBytes(of: &n) { nb in
            crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                p, nil, p, UInt64(length - tagSize), p + length - tagSize,
                ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count), nb.bindMemory(to: UInt8.self).baseAddress!,
                key.assumingMemoryBound(to: UInt8.self))
        } == 0
    }

    /// The handshake's AEAD over arrays (cold path): ciphertext || tag.
    public static func seal(key: [UInt8], counter: UInt64, plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        var out = plaintext + [UInt8](repeating: 0, count: tagSize)
        key.withUnsafeBytes { k in
            ad.withUnsafeBytes { a in
                out.withUnsafeMutableBytes { seal(key: k.baseAddress!, counter: counter, data: $0.baseAddress!, length: plaintext.count, ad: a) }
            }
        }
        return out
    }

    public static func open(key: [UInt8], counter: UInt64, ciphertext: [UInt8], ad: [UInt8]) -> [UInt8]? {
        guard ciphertext.count >= tagSize else { return nil }
        var buffer = ciphertext
        let ok = key.withUnsafeBytes { k in
            ad.withUnsafeBytes { a in
                buffer.withUnsafeMutableBytes { open(key: k.baseAddress!, counter: counter, data: $0.baseAddress!, length: ciphertext.count, ad: a) }
            }
        }
        return ok ? Array(buffer.prefix(ciphertext.count - tagSize)) : nil
    }

    /// XChaCha20-Poly1305 for cookie replies (24-byte random nonce).
    public static func xseal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + tagSize)
        var length: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&out, &length, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, key)
        return out
    }

    public static func xopen(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], ad: [UInt8]) -> [UInt8]? {
        guard ciphertext.count >= tagSize else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagSize)
        var length: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(&out, &length, nil, ciphertext, UInt64(ciphertext.count), ad, UInt64(ad.count), nonce, key)
        return rc == 0 ? out : nil
    }
}

/// X25519 Diffie-Hellman; an all-zero result (a low-order point) is refused as WireGuard does.
public enum X25519 {
    public static func sharedSecret(_ privateKey: PrivateKey, _ publicKey: PublicKey) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        let rc = privateKey.secret.withUnsafeBytes { s in
            crypto_scalarmult_curve25519(&out, s.bindMemory(to: UInt8.self).baseAddress!, publicKey.bytes)
        }
        guard rc == 0, sodium_is_zero(out, 32) == 0 else { return nil }
        return out
    }
}

/// TAI64N: the initiation's timestamp, strictly increasing per initiator so an old
/// initiation replayed is rejected.
public enum TAI64N {
    public static func encode(_ wall: WallClock) -> [UInt8] {
        let seconds = UInt64(0x4000_0000_0000_000a) &+ UInt64(bitPattern: wall.seconds)
        // Round down to a multiple of 2^24 ns (~16 ms), as wireguard-go does, so the
        // timestamp does not reveal the clock precisely.
        let nanos = UInt32(wall.nanoseconds) & ~UInt32(0xFFFFFF)
        return withUnsafeBytes(of: seconds.bigEndian, Array.init) + withUnsafeBytes(of: nanos.bigEndian, Array.init)
    }

    /// Big-endian byte order makes "later" the same as "lexicographically greater".
    public static func isAfter(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        for i in 0..<12 where a[i] != b[i] { return a[i] > b[i] }
        return false
    }
}
