import Monotonic
import Testing
@testable import WireGuard

/// The handshake and the first transport message with fixed keys, compared byte for byte
/// with an independent implementation (scripts/wireguard-vectors.py: Python's hashlib and
/// the `cryptography` package following the WireGuard paper).
@Suite struct HandshakeVectorTests {
    static let initiation = "01000000443322117b0d47d93427f8311160781c7c733fd89f88970aef490d8aa0ee19a4cb8a1b1481e498317da959fba46669572516a5e6c021bfa620bb6c56ca0082e1feae14988c2c64d024c617734a263f76a008df04d0f94bad8ee75ec8e6c2695569183cc7dc1e27ce0c1b8436de667e2772a7b2bf0a47eea65a49108a7429fd1500000000000000000000000000000000"
    static let response = "020000008877665544332211ff2ee45601ec1b67310c7790404585ae697331eee1c1f8cf2419731c1fff3e6bf3c8d3f436c557547df21dab91e9104325f7f5423db1e1f03ae6053331dffc8a00000000000000000000000000000000"
    static let sendInitiator = "a007faf842d83f5bd3be20a14e0ffcec34c84867b78b051980602713205922de"
    static let receiveInitiator = "d982d5cd10d34a7802b6c19fa441cd9164d70e4f4d62007ab416879ee8bd1b99"
    static let firstData = "0400000088776655000000000000000049504a821f2cefcdfd5cf1837d112b4c154ef6a1c97a8d49d501917cb5763553c0d1ca77c4a5f4f30ac51ff559d20c4d"

    let initiatorStatic = PrivateKey(bytes: [UInt8](repeating: 0x11, count: 32))!
    let responderStatic = PrivateKey(bytes: [UInt8](repeating: 0x22, count: 32))!
    let initiatorEphemeral = PrivateKey(bytes: [UInt8](repeating: 0x33, count: 32))!
    let responderEphemeral = PrivateKey(bytes: [UInt8](repeating: 0x44, count: 32))!
    let psk = [UInt8](repeating: 0x55, count: 32)
    let wall = WallClock(seconds: 1_700_000_000, nanoseconds: 123_456_789)
    let now = MonotonicInstant(nanoseconds: 1)

    @Test func initiationResponseAndTransportMatchTheIndependentImplementation() throws {
        let staticShared = try #require(X25519.sharedSecret(initiatorStatic, responderStatic.publicKey))
        var (initiation, pending) = try #require(HandshakeCodec.createInitiation(
            local: initiatorStatic, localPublic: initiatorStatic.publicKey, remote: responderStatic.publicKey,
            staticShared: staticShared, ephemeral: initiatorEphemeral, senderIndex: 0x1122_3344,
            timestamp: TAI64N.encode(wall), now: now))
        var initiatorCookies = CookieGenerator(remote: responderStatic.publicKey, lifetime: .seconds(120))
        initiatorCookies.addMACs(&initiation, now: now)
        #expect(hex(initiation) == Self.initiation)

        let consumed = try #require(HandshakeCodec.consumeInitiation(initiation, local: responderStatic, localPublic: responderStatic.publicKey) {
            $0 == initiatorStatic.publicKey ? X25519.sharedSecret(responderStatic, $0) : nil
        })
        #expect(consumed.initiatorStatic == initiatorStatic.publicKey)
        #expect(consumed.initiatorIndex == 0x1122_3344)
        #expect(consumed.timestamp == TAI64N.encode(wall))
        var (response, responderSend, responderReceive) = try #require(HandshakeCodec.createResponse(
            consumed, ephemeral: responderEphemeral, initiatorStatic: initiatorStatic.publicKey, psk: psk, senderIndex: 0x5566_7788))
        var responderCookies = CookieGenerator(remote: initiatorStatic.publicKey, lifetime: .seconds(120))
        responderCookies.addMACs(&response, now: now)
        #expect(hex(response) == Self.response)

        let keys = try #require(HandshakeCodec.consumeResponse(response, pending: pending, local: initiatorStatic, psk: psk))
        #expect(hex(keys.send) == Self.sendInitiator)
        #expect(hex(keys.receive) == Self.receiveInitiator)
        #expect(responderReceive == keys.send && responderSend == keys.receive)

        // The first data packet: an IPv4 header of 28 bytes, padded to 32, counter 0.
        var packet = unhex("4500001c000100004001f7cf0a0000010a000002") + [UInt8](repeating: 0, count: 8)
        let sealed = AEAD.seal(key: keys.send, counter: 0, plaintext: packet + [0, 0, 0, 0], ad: [])
        #expect(hex([4, 0, 0, 0, 0x88, 0x77, 0x66, 0x55] + [UInt8](repeating: 0, count: 8) + sealed) == Self.firstData)
        packet.removeAll()
    }

    @Test func aWrongPresharedKeyFailsTheResponse() throws {
        let staticShared = try #require(X25519.sharedSecret(initiatorStatic, responderStatic.publicKey))
        let (initiation, pending) = try #require(HandshakeCodec.createInitiation(
            local: initiatorStatic, localPublic: initiatorStatic.publicKey, remote: responderStatic.publicKey,
            staticShared: staticShared, ephemeral: initiatorEphemeral, senderIndex: 1, timestamp: TAI64N.encode(wall), now: now))
        let consumed = try #require(HandshakeCodec.consumeInitiation(initiation, local: responderStatic, localPublic: responderStatic.publicKey) {
            X25519.sharedSecret(responderStatic, $0)
        })
        let (response, _, _) = try #require(HandshakeCodec.createResponse(
            consumed, ephemeral: responderEphemeral, initiatorStatic: initiatorStatic.publicKey, psk: psk, senderIndex: 2))
        #expect(HandshakeCodec.consumeResponse(response, pending: pending, local: initiatorStatic, psk: [UInt8](repeating: 0, count: 32)) == nil)
    }

    @Test func anInitiationForAnotherResponderDoesNotDecrypt() throws {
        let other = PrivateKey.generate()
        let staticShared = try #require(X25519.sharedSecret(initiatorStatic, responderStatic.publicKey))
        let (initiation, _) = try #require(HandshakeCodec.createInitiation(
            local: initiatorStatic, localPublic: initiatorStatic.publicKey, remote: responderStatic.publicKey,
            staticShared: staticShared, ephemeral: initiatorEphemeral, senderIndex: 1, timestamp: TAI64N.encode(wall), now: now))
        #expect(HandshakeCodec.consumeInitiation(initiation, local: other, localPublic: other.publicKey) { X25519.sharedSecret(other, $0) } == nil)
    }
}
