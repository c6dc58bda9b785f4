import Monotonic
import Testing
@testable import WireGuard

/// BLAKE2s, HMAC and the KDF against RFC 7693 and against Python's hashlib/hmac
/// (scripts/wireguard-vectors.py regenerates the constants).
@Suite struct CryptoTests {
    static let pattern = (0..<300).map { UInt8($0 % 251) }
    static let key32 = (0..<32).map { UInt8($0) }

    @Test func rfc7693AppendixB() {
        #expect(hex(Blake2s.hash(Array("abc".utf8))) == "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982")
    }

    /// RFC 7693 Appendix E: the self-test over every output length and message length.
    @Test func rfc7693SelfTest() {
        func selftestSequence(_ length: Int, seed: UInt32) -> [UInt8] {
            var a = 0xDEAD4BAD &* seed
            var b: UInt32 = 1
            return (0..<length).map { _ in
                let t = a &+ b
                a = b
                b = t
                return UInt8(truncatingIfNeeded: t >> 24)
            }
        }
        var outer = Blake2s(outputLength: 32)
        for outlen in [16, 20, 28, 32] {
            for inlen in [0, 3, 64, 65, 255, 1024] {
                let input = selftestSequence(inlen, seed: UInt32(inlen))
                var plain = Blake2s(outputLength: outlen)
                plain.update(input)
                outer.update(plain.finalize())
                let key = selftestSequence(outlen, seed: UInt32(outlen))
                var keyed = Blake2s(outputLength: outlen, key: key)
                keyed.update(input)
                outer.update(keyed.finalize())
            }
        }
        #expect(hex(outer.finalize()) == "6a411f08ce25adcdfb02aba641451cec53c598b24f4fc787fbdc88797f4c1dfe")
    }

    @Test(arguments: [
        (0, "69217a3079908094e11121d042354a7c1f55b6482ca1a51e1b250dfd1ed0eef9"),
        (1, "e34d74dbaf4ff4c6abd871cc220451d2ea2648846c7757fbaac82fe51ad64bea"),
        (55, "f4495470f226c8c214be08fdfad4bc4a2a9dbea9136a210df0d4b64929e6fc14"),
        (64, "56f34e8b96557e90c1f24b52d0c89d51086acf1b00f634cf1dde9233b8eaaa3e"),
        (65, "1b53ee94aaf34e4b159d48de352c7f0661d0a40edff95a0b1639b4090e974472"),
        (128, "1fa877de67259d19863a2a34bcc6962a2b25fcbf5cbecd7ede8f1fa36688a796"),
        (300, "203d6441349213c6b2b727d0ac6beb365f32938cef2cd0677f2a6b7f8cb02dd7"),
    ])
    func hashMatchesHashlib(length: Int, expected: String) {
        #expect(hex(Blake2s.hash(Array(Self.pattern.prefix(length)))) == expected)
    }

    @Test(arguments: [
        (0, "9536f9b267655743dee97b8a670f9f53"),
        (16, "246519722001f6e8e97a2183f5985e53"),
        (64, "f1efa90d2547036841ecd3627fafbc36"),
        (100, "0b67d33f8b859c3157fbabd9e6e47ed0"),
    ])
    func macMatchesHashlib(length: Int, expected: String) {
        #expect(hex(Blake2s.mac(key: Self.key32, Array(Self.pattern.prefix(length)))) == expected)
    }

    @Test func hmacAndKDFMatchPython() {
        let input = Array(Self.pattern.prefix(100))
        #expect(hex(KDF.hmac(key: Self.key32, input)) == "a81c95080ba2a7c4ed1b7b4c21dec2c4fd6dc9f03ff37b6d65289dc95a7d1ef1")
        #expect(KDF.derive(3, key: Self.key32, input: input).map(hex) == [
            "90d0e91cdaea20e41b7e43ef99a35292921d3d49c1d86f48ddf62dbc1cc1bb01",
            "8814819cb396ee544e3a8314285739d6527a8d87cf930252e61501140ddbba51",
            "2d4748e29b90d92057489d6aaa0ee0d2a135113b4baaefb8d82fb54bffe16496",
        ])
    }

    @Test func aeadRoundTripsAndRejectsTampering() throws {
        let key = Self.key32
        let sealed = AEAD.seal(key: key, counter: 7, plaintext: Array("hello".utf8), ad: [1, 2])
        #expect(AEAD.open(key: key, counter: 7, ciphertext: sealed, ad: [1, 2]) == Array("hello".utf8))
        #expect(AEAD.open(key: key, counter: 8, ciphertext: sealed, ad: [1, 2]) == nil)
        var flipped = sealed
        flipped[0] ^= 1
        #expect(AEAD.open(key: key, counter: 7, ciphertext: flipped, ad: [1, 2]) == nil)
        let nonce = [UInt8](repeating: 9, count: 24)
        let x = AEAD.xseal(key: key, nonce: nonce, plaintext: [5, 6], ad: [7])
        #expect(AEAD.xopen(key: key, nonce: nonce, ciphertext: x, ad: [7]) == [5, 6])
        #expect(AEAD.xopen(key: key, nonce: nonce, ciphertext: x, ad: [8]) == nil)
    }

    /// RFC 7748 section 6.1, and refusal of a low-order point.
    @Test func x25519() throws {
        let alice = try #require(PrivateKey(hex: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let bobPublic = try #require(PublicKey(hex: "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
        #expect(X25519.sharedSecret(alice, bobPublic).map(hex) == "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        #expect(X25519.sharedSecret(alice, PublicKey(bytes: [UInt8](repeating: 0, count: 32))!) == nil)
    }

    @Test func tai64nIsMonotonicAndWhitened() {
        let a = TAI64N.encode(WallClock(seconds: 1_700_000_000, nanoseconds: 123_456_789))
        let b = TAI64N.encode(WallClock(seconds: 1_700_000_000, nanoseconds: 123_456_799))
        let c = TAI64N.encode(WallClock(seconds: 1_700_000_001, nanoseconds: 0))
        #expect(a == b)   // within the same 2^24 ns step
        #expect(TAI64N.isAfter(c, a) && !TAI64N.isAfter(a, c) && !TAI64N.isAfter(a, b))
    }
}

func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
}
func unhex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var chars = Array(text.utf8)[...]
    while chars.count >= 2 {
        out.append(UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16)!)
        chars = chars.dropFirst(2)
    }
    return out
}
