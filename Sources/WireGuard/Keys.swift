import CSodium
import HexDigits

/// 32 secret bytes that live outside Swift's copy-on-write arrays, so there is exactly one
/// copy to wipe: the storage is zeroed with sodium_memzero when the last reference goes.
public final class SecretBytes: @unchecked Sendable {
    public static let count = 32
    let storage: UnsafeMutableRawBufferPointer

    public init(_ bytes: some Collection<UInt8>) {
        precondition(bytes.count == Self.count, "a key is \(Self.count) bytes")
        storage = .allocate(byteCount: Self.count, alignment: 16)
        storage.copyBytes(from: bytes)
    }

    /// Fills the bytes from the caller's closure (for keys computed straight into place).
    public init(filling body: (UnsafeMutableRawBufferPointer) -> Void) {
        storage = .allocate(byteCount: Self.count, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        body(storage)
    }

    deinit {
        sodium_memzero(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(storage))
    }

    /// Constant-time comparison.
    public func isEqual(to other: SecretBytes) -> Bool {
        sodium_memcmp(storage.baseAddress, other.storage.baseAddress, Self.count) == 0
    }

    public var isZero: Bool { sodium_is_zero(storage.baseAddress, Self.count) == 1 }
}

enum Base64Key {
    /// Decodes exactly 32 bytes from standard base64 (44 characters with one '=').
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 44 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        var length = 0
        let rc = utf8.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                sodium_base642bin(output.baseAddress!, 32, input.baseAddress, input.count,
                                  nil, &length, nil, sodium_base64_VARIANT_ORIGINAL)
            }
        }
        guard rc == 0, length == 32 else { return nil }
        return out
    }

    static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        var out = [CChar](repeating: 0, count: 45)
        _ = out.withUnsafeMutableBufferPointer { output in
            sodium_bin2base64(output.baseAddress!, 45, bytes.bindMemory(to: UInt8.self).baseAddress,
                              bytes.count, sodium_base64_VARIANT_ORIGINAL)
        }
        return String(decoding: out.prefix(44).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Decodes exactly 32 bytes from 64 lowercase or uppercase hex digits (the UAPI form).
    static func decodeHex(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 64 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<32 {
            guard let hi = nibble(utf8[2 * i]), let lo = nibble(utf8[2 * i + 1]) else { return nil }
            out[i] = hi << 4 | lo
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// A Curve25519 public key: not secret, so a plain value.
public struct PublicKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    public init?(base64 text: some StringProtocol) {
        guard let b = Base64Key.decode(text) else { return nil }
        bytes = b
    }

    public init?(hex text: some StringProtocol) {
        guard let b = Base64Key.decodeHex(text) else { return nil }
        bytes = b
    }

    public var base64: String { bytes.withUnsafeBytes(Base64Key.encode) }
    public var hex: String { bytes.withUnsafeBytes { hexDigits(bytes: $0) } }
    public var description: String { base64 }
}

/// A Curve25519 private key, clamped as X25519 uses it; wiped when dropped.
public struct PrivateKey: Sendable {
    public let secret: SecretBytes

    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        secret = SecretBytes(bytes)
    }

    public init?(base64 text: some StringProtocol) {
        guard var b = Base64Key.decode(text) else { return nil }
        secret = SecretBytes(b)
        sodium_memzero(&b, b.count)
    }

    public init?(hex text: some StringProtocol) {
        guard var b = Base64Key.decodeHex(text) else { return nil }
        secret = SecretBytes(b)
        sodium_memzero(&b, b.count)
    }

    /// A fresh key from the system's CSPRNG.
    public static func generate() -> PrivateKey {
        PrivateKey(secret: SecretBytes { randombytes_buf($0.baseAddress!, 32) })
    }

    init(secret: SecretBytes) { self.secret = secret }

    public var publicKey: PublicKey {
        var out = [UInt8](repeating: 0, count: 32)
        secret.withUnsafeBytes { s in
            _ = crypto_scalarmult_curve25519_base(&out, s.bindMemory(to: UInt8.self).baseAddress!)
        }
        return PublicKey(bytes: out)!
    }

    public var base64: String { secret.withUnsafeBytes(Base64Key.encode) }
    public var hex: String { secret.withUnsafeBytes { hexDigits(bytes: $0) } }
}

/// The optional pre-shared symmetric key mixed into the handshake; wiped when dropped.
public struct PresharedKey: Sendable {
    public let secret: SecretBytes

    public init?(base64 text: some StringProtocol) {
        guard var b = Base64Key.decode(text) else { return nil }
        secret = SecretBytes(b)
        sodium_memzero(&b, b.count)
    }

    public init?(hex text: some StringProtocol) {
        guard var b = Base64Key.decodeHex(text) else { return nil }
        secret = SecretBytes(b)
        sodium_memzero(&b, b.count)
    }

    public init(secret: SecretBytes) { self.secret = secret }

    public var base64: String { secret.withUnsafeBytes(Base64Key.encode) }
    public var hex: String { secret.withUnsafeBytes { hexDigits(bytes: $0) } }
}

/// libsodium must be initialised once before its CSPRNG is used; cheap after the first call.
public enum Sodium {
    public static let ready: Bool = sodium_init() >= 0
}
