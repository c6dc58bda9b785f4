/// BLAKE2s (RFC 7693), the hash WireGuard uses for HASH, MAC and (through HMAC) its KDF.
/// libsodium only has BLAKE2b, so it is written here and checked against the RFC's vectors.
public struct Blake2s {
    private static let iv: [UInt32] = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19]
    /// The message schedule, flattened: round r uses sigma[16 r ..< 16 r + 16].
    private static let sigma: [UInt8] = [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3,
        11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4,
        7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8,
        9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13,
        2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9,
        12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11,
        13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10,
        6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5,
        10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0,
    ]

    /// Chaining value (8 words), then the block buffer (16 words = 64 bytes), in one
    /// inline tuple: no heap allocation per hash.
    private var state: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    private var t: UInt64 = 0
    private var filled = 0
    public let outputLength: Int

    /// `outputLength` 1...32; a key of 0...32 bytes makes it a MAC.
    public init(outputLength: Int = 32, key: some Collection<UInt8> = [UInt8]()) {
        precondition((1...32).contains(outputLength) && key.count <= 32)
        self.outputLength = outputLength
        let keyLength = key.count
        withUnsafeMutableBytes(of: &state) { raw in
            let h = raw.baseAddress!.assumingMemoryBound(to: UInt32.self)
            for i in 0..<8 { h[i] = Self.iv[i] }
            h[0] ^= 0x0101_0000 | UInt32(keyLength) << 8 | UInt32(outputLength)
            if keyLength > 0 {
                let block = raw.baseAddress! + 32
                block.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
                var i = 0
                for byte in key { block.storeBytes(of: byte, toByteOffset: i, as: UInt8.self); i += 1 }
            }
        }
        if keyLength > 0 { filled = 64 }
    }

    public mutating func update(_ data: some Collection<UInt8>) {
        if let done = data.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) { return done }
        Array(data).withUnsafeBytes { update($0) }
    }

    public mutating func update(_ data: UnsafeRawBufferPointer) {
        var offset = 0
        let count = data.count
        withUnsafeMutableBytes(of: &state) { raw in
            let h = raw.baseAddress!.assumingMemoryBound(to: UInt32.self)
            let block = raw.baseAddress! + 32
            while offset < count {
                if filled == 64 {
                    t &+= 64
                    Self.compress(h, UnsafeRawPointer(block), t, last: false)
                    filled = 0
                }
                let take = min(64 - filled, count - offset)
                (block + filled).copyMemory(from: data.baseAddress! + offset, byteCount: take)
                filled += take
                offset += take
            }
        }
    }

    public mutating func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputLength)
        withUnsafeMutableBytes(of: &state) { raw in
            let h = raw.baseAddress!.assumingMemoryBound(to: UInt32.self)
            let block = raw.baseAddress! + 32
            t &+= UInt64(filled)
            (block + filled).initializeMemory(as: UInt8.self, repeating: 0, count: 64 - filled)
            Self.compress(h, UnsafeRawPointer(block), t, last: true)
            for i in 0..<outputLength { out[i] = UInt8(truncatingIfNeeded: UInt32(littleEndian: h[i / 4]) >> (8 * UInt32(i % 4))) }
            Zero.wipe(raw)
        }
        return out
    }

    private static func compress(_ h: UnsafeMutablePointer<UInt32>, _ block: UnsafeRawPointer, _ t: UInt64, last: Bool) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 32) { scratch in
            let v = scratch.baseAddress!
            let m = v + 16
            for i in 0..<16 { m[i] = UInt32(littleEndian: block.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)) }
            for i in 0..<8 { v[i] = h[i]; v[i + 8] = iv[i] }
            v[12] ^= UInt32(truncatingIfNeeded: t)
            v[13] ^= UInt32(truncatingIfNeeded: t >> 32)
            if last { v[14] = ~v[14] }
            sigma.withUnsafeBufferPointer { sigma in
                for round in 0..<10 {
                    let s = sigma.baseAddress! + 16 * round
                    g(v, 0, 4, 8, 12, m[Int(s[0])], m[Int(s[1])]); g(v, 1, 5, 9, 13, m[Int(s[2])], m[Int(s[3])])
                    g(v, 2, 6, 10, 14, m[Int(s[4])], m[Int(s[5])]); g(v, 3, 7, 11, 15, m[Int(s[6])], m[Int(s[7])])
                    g(v, 0, 5, 10, 15, m[Int(s[8])], m[Int(s[9])]); g(v, 1, 6, 11, 12, m[Int(s[10])], m[Int(s[11])])
                    g(v, 2, 7, 8, 13, m[Int(s[12])], m[Int(s[13])]); g(v, 3, 4, 9, 14, m[Int(s[14])], m[Int(s[15])])
                }
            }
            for i in 0..<8 { h[i] ^= v[i] ^ v[i + 8] }
            UnsafeMutableRawBufferPointer(scratch).initializeMemory(as: UInt8.self, repeating: 0)
        }
    }

    @inline(__always)
    private static func g(_ v: UnsafeMutablePointer<UInt32>, _ a: Int, _ b: Int, _ c: Int, _ d: Int, _ x: UInt32, _ y: UInt32) {
        v[a] = v[a] &+ v[b] &+ x; v[d] = (v[d] ^ v[a]).rotatedRight(16)
        v[c] = v[c] &+ v[d]; v[b] = (v[b] ^ v[c]).rotatedRight(12)
        v[a] = v[a] &+ v[b] &+ y; v[d] = (v[d] ^ v[a]).rotatedRight(8)
        v[c] = v[c] &+ v[d]; v[b] = (v[b] ^ v[c]).rotatedRight(7)
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
        var prk = hmac(key: key, input)
        var outputs: [[UInt8]] = []
        var block: [UInt8] = []
        for i in 1...n {
            block.append(UInt8(i))
            let output = hmac(key: prk, block)
            Zero.wipe(&block)
            block = output
            outputs.append(output)
        }
        Zero.wipe(&prk)
        return outputs
    }
}
