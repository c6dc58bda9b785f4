import HexDigits
import Testing

/// The forms the project's text is written in: `ip rule` and vpnctl write marks unpadded,
/// nft's ruleset text pads them to eight digits, the UAPI writes keys as digit pairs, TOML's
/// messages write code points as U+XXXX.
@Suite struct HexDigitsTests {
    @Test func marks() {
        #expect(hex(0x7f00_0000) == "0x7f000000")
        #expect(hex(0x0100_0000) == "0x1000000")
        #expect(hex(0) == "0x0")
        #expect(hex(0x0100_0000, digits: 8) == "0x01000000")
        #expect(hex(0x8000_0000, digits: 8) == "0x80000000")
        #expect(hex(UInt32.max, digits: 8) == "0xffffffff")
    }

    @Test func bytesAndCodePoints() {
        #expect(hexDigits(bytes: [0x02, 0x00, 0x5e, 0xab, 0xff]) == "02005eabff")
        #expect(hexDigits(bytes: [0x02, 0x00, 0x5e, 0x00, 0x53, 0x0a], separator: ":") == "02:00:5e:00:53:0a")
        #expect(hexDigits(bytes: []) == "")
        #expect(hexDigits(UInt32(0xe9), minimum: 4, uppercase: true) == "00E9")
        #expect(hexDigits(UInt32(0x1f600), minimum: 4, uppercase: true) == "1F600")
        #expect(hexDigits(UInt8(0xc3), uppercase: true) == "C3")
    }
}
