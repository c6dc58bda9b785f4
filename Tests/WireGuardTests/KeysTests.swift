import Testing
@testable import WireGuard

@Suite struct KeysTests {
    // RFC 7748 section 6.1: Alice's private and public key.
    let alicePrivateHex = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
    let alicePublicHex = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"

    @Test func publicKeyFromPrivateMatchesRFC7748() throws {
        let key = try #require(PrivateKey(hex: alicePrivateHex))
        #expect(key.publicKey.hex == alicePublicHex)
    }

    @Test func base64RoundTrips() throws {
        let key = try #require(PrivateKey(hex: alicePrivateHex))
        let again = try #require(PrivateKey(base64: key.base64))
        #expect(again.hex == alicePrivateHex)
        #expect(key.base64.count == 44)
    }

    @Test func rejectsMalformedKeys() {
        #expect(PublicKey(base64: "short") == nil)
        #expect(PublicKey(base64: String(repeating: "A", count: 43) + "!") == nil)
        #expect(PublicKey(hex: String(repeating: "g", count: 64)) == nil)
        #expect(PrivateKey(hex: String(repeating: "0", count: 62)) == nil)
    }

    @Test func generatedKeysDiffer() {
        #expect(Sodium.ready)
        #expect(PrivateKey.generate().hex != PrivateKey.generate().hex)
    }
}
