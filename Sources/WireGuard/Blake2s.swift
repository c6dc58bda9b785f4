/// BLAKE2s (RFC 7693), the hash WireGuard uses for HASH, MAC and (through HMAC) its KDF.
/// libsodium only has BLAKE2b, so it is written here and checked against the RFC's vectors.
public struct Blake2s {
    private static let iv: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
    private static let sigma: [[Int]] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ]

    private var h: [UInt32]
    private var t: UInt64 = 0
    private var buffer = [UInt8](repeating: 0, count: 64)
    private var filled = 0
    public let outputLength: Int

    /// `outputLength` 1...32; a key of 0...32 bytes makes it a MAC.
    public init(outputLength: Int = 32, key: some Collection<UInt8> = [UInt8]()) {
        precondition((1...32).contains(outputLength) && key.count <= 32)
        self.outputLength = outputLength
        let iv = Self.iv
        h = [iv.0 ^ (0x0101_0000 | UInt32(key.count) << 8 | UInt32(outputLength)), iv.1, iv.2, iv.3, iv.4, iv.5, iv.6, iv.7]
        if !key.isEmpty {
            var block = [UInt8](repeating: 0, count: 64)
            block.replaceSubrange(0..<key.count, with: key)
            update(block)
            block.withUnsafeMutableBytes { Zero.wipe($0) }
        }
    }

    public mutating func update(_ data: some Collection<UInt8>) {
        for byte in data {
            if filled == 64 {
                t &+= 64
                compress(last: false)
                filled = 0
            }
            buffer[filled] = byte
            filled += 1
        }
    }

    public mutating func finalize() -> [UInt8] {
        t &+= UInt64(filled)
        for i in filled..<64 { buffer[i] = 0 }
        compress(last: true)
        var out = [UInt8]()
        out.reserveCapacity(32)
        for word in h { for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) } }
        buffer.withUnsafeMutableBytes { Zero.wipe($0) }
        for i in h.indices { h[i] = 0 }
        return Array(out.prefix(outputLength))
    }

    private mutating func compress(last: Bool) {
        var m = [UInt32](repeating: 0, count: 16)
        for i in 0..<16 {
            m[i] = UInt32(buffer[4 * i]) | UInt32(buffer[4 * i + 1]) << 8 | UInt32(buffer[4 * i + 2]) << 16 | UInt32(buffer[4 * i + 3]) << 24
        }
        let iv = Self.iv
        var v: [UInt32] = h + [iv.0, iv.1, iv.2, iv.3, iv.4 ^ UInt32(truncatingIfNeeded: t), iv.5 ^ UInt32(truncatingIfNeeded: t >> 32),
                               last ? ~iv.6 : iv.6, iv.7]
        @inline(__always) func g(_ a: Int, _ b: Int, _ c: Int, _ d: Int, _ x: UInt32, _ y: UInt32) {
            v[a] = v[a] &+ v[b] &+ x; v[d] = (v[d] ^ v[a]).rotatedRight(16)
            v[c] = v[c] &+ v[d]; v[b] = (v[b] ^ v[c]).rotatedRight(12)
            v[a] = v[a] &+ v[b] &+ y; v[d] = (v[d] ^ v[a]).rotatedRight(8)
            v[c] = v[c] &+ v[d]; v[b] = (v[b] ^ v[c]).rotatedRight(7)
        }
        for round in 0..<10 {
            let s = Self.sigma[round]
            g(0, 4, 8, 12, m[s[0]], m[s[1]]); g(1, 5, 9, 13, m[s[2]], m[s[3]])
            g(2, 6, 10, 14, m[s[4]], m[s[5]]); g(3, 7, 11, 15, m[s[6]], m[s[7]])
            g(0, 5, 10, 15, m[s[8]], m[s[9]]); g(1, 6, 11, 12, m[s[10]], m[s[11]])
            g(2, 7, 8, 13, m[s[12]], m[s[13]]); g(3, 4, 9, 14, m[s[14]], m[s[15]])
        }
        for i in 0..<8 { h[i] ^= v[i] ^ v[i + 8] }
    }

    /// HASH(input): 32 bytes.
    public static func hash(_ parts: [UInt8]...) -> [UInt8] {
        var b = Blake2s()
        for p in parts { b.update(p) }
        return b.finalize()
    }

    /// MAC(key, input): keyed BLAKE2s with 16 bytes out, as WireGuard's mac1/mac2/cookie.
    public static func mac(key: some Collection<UInt8>, _ input: some Collection<UInt8>) -> [UInt8] {
        var b = Blake2s(outputLength: 16, key: key)
        b.update(input)
        return b.finalize()
    }
}

extension UInt32 {
    @inline(__always) func rotatedRight(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}

/// HMAC over BLAKE2s (block 64) and WireGuard's HKDF built on it.
public enum KDF {
    public static func hmac(key: [UInt8], _ input: [UInt8]) -> [UInt8] {
        var k = key.count > 64 ? Blake2s.hash(key) : key
        k += [UInt8](repeating: 0, count: 64 - k.count)
        var inner = Blake2s()
        inner.update(k.map { $0 ^ 0x36 })
        inner.update(input)
        let innerHash = inner.finalize()
        var outer = Blake2s()
        outer.update(k.map { $0 ^ 0x5c })
        outer.update(innerHash)
        k.withUnsafeMutableBytes { Zero.wipe($0) }
        return outer.finalize()
    }

    /// KDF_n(key, input): n outputs of 32 bytes.
    public static func derive(_ n: Int, key: [UInt8], input: [UInt8]) -> [[UInt8]] {
        let prk = hmac(key: key, input)
        var outputs: [[UInt8]] = []
        var previous: [UInt8] = []
        for i in 1...n {
            previous = hmac(key: prk, previous + [UInt8(i)])
            outputs.append(previous)
        }
        return outputs
    }
}
