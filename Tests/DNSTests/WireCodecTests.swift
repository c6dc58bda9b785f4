import Addresses
import DomainNames
import Testing
@testable import DNS

/// The codec against hand-made messages: what RFC 1035 allows (forward pointers, the
/// 255-byte limit exactly) is read, and every way a message can be broken is refused with
/// its reason and never traps.
@Suite struct WireCodecTests {
    /// dnspython's wire form of "WWW.example A" answered by a CNAME to cdn.example and an
    /// address, with EDNS (DO set) and a cookie option; names compressed.
    static let cdnAnswer = unhex("12348183000100020000000103575757076578616d706c650000010001c00c000500010000012c00060363646ec010c029000100010000001e0004c000020100002904d000008000000c000a00083132333435363738")!

    @Test func parsesAnAnswerWithCompressionAndEDNS() throws {
        let message = try DNSMessage(parsing: Self.cdnAnswer)
        #expect(message.header.id == 0x1234)
        #expect(message.header.isResponse && message.header.recursionDesired && message.header.recursionAvailable)
        #expect(message.header.responseCode == .nameError)
        #expect(message.questions == [DNSQuestion(name: name("www.example"), type: .a)])
        #expect(message.questions[0].name.description == "WWW.example.", "case is kept as sent")
        #expect(message.answers == [cname("www.example", "cdn.example", ttl: 300), a("cdn.example", "192.0.2.1", ttl: 30)])
        #expect(message.edns == EDNS(udpPayloadSize: 1232, flags: 0x8000, options: [.init(code: 10, data: Array("12345678".utf8))]))
        #expect(try DNSMessage(parsing: message.encoded()) == message)
    }

    /// A header announcing one question, followed by `body`.
    private func questionMessage(_ body: [UInt8]) -> [UInt8] {
        [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0] + body
    }

    @Test func compressionLoopsAreRefused() {
        // A pointer to itself, and two pointers pointing at each other.
        #expect(throws: DNSWireError.compressionLoop) { try DNSMessage(parsing: questionMessage([0xc0, 12, 0, 1, 0, 1])) }
        #expect(throws: DNSWireError.compressionLoop) { try DNSMessage(parsing: questionMessage([0xc0, 14, 0xc0, 12, 0, 1, 0, 1])) }
        // A loop that yields a label each time round ends at the length limit.
        #expect(throws: DNSWireError.nameTooLong) { try DNSMessage(parsing: questionMessage([1, 0x61, 0xc0, 12, 0, 1, 0, 1])) }
        // A forward pointer into a loop further on.
        #expect(throws: DNSWireError.compressionLoop) { try DNSMessage(parsing: questionMessage([0xc0, 18, 0, 1, 0, 1, 0xc0, 20, 0xc0, 18])) }
    }

    @Test func forwardPointersAreRead() throws {
        // The question's name points forward to the answer's owner name.
        var bytes: [UInt8] = [0, 7, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]
        bytes += [0xc0, 18, 0, 1, 0, 1]
        bytes += [3] + Array("www".utf8) + [7] + Array("example".utf8) + [0, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7]
        let message = try DNSMessage(parsing: bytes)
        #expect(message.questions == [DNSQuestion(name: name("www.example"), type: .a)])
        #expect(message.answers == [a("www.example", "192.0.2.7", ttl: 60)])
    }

    @Test func pointersOutsideTheMessageOrIntoTheHeaderAreRefused() {
        #expect(throws: DNSWireError.pointerOutOfRange) { try DNSMessage(parsing: questionMessage([0xc0, 3, 0, 1, 0, 1])) }
        #expect(throws: DNSWireError.pointerOutOfRange) { try DNSMessage(parsing: questionMessage([0xc0, 200, 0, 1, 0, 1])) }
        #expect(throws: DNSWireError.pointerOutOfRange) { try DNSMessage(parsing: questionMessage([0xff, 0xff, 0, 1, 0, 1])) }
    }

    @Test func reservedLabelTypesAreRefused() {
        // 0x40 would be a 64-byte label: labels stop at 63 because of these two bits.
        #expect(throws: DNSWireError.reservedLabelType) { try DNSMessage(parsing: questionMessage([0x40] + [UInt8](repeating: 0x61, count: 64) + [0, 0, 1, 0, 1])) }
        #expect(throws: DNSWireError.reservedLabelType) { try DNSMessage(parsing: questionMessage([0x80, 0, 0, 1, 0, 1])) }
    }

    @Test func namesUpTo255BytesAreReadAndLongerOnesRefused() throws {
        let label63 = [63] + [UInt8](repeating: 0x61, count: 63)
        // 3 * 64 + 62 + 1 = 255 bytes.
        let longest = label63 + label63 + label63 + [61] + [UInt8](repeating: 0x62, count: 61) + [0]
        let message = try DNSMessage(parsing: questionMessage(longest + [0, 1, 0, 1]))
        #expect(message.questions[0].name.wire.count == 255)
        let tooLong = label63 + label63 + label63 + [62] + [UInt8](repeating: 0x62, count: 62) + [0]
        #expect(throws: DNSWireError.nameTooLong) { try DNSMessage(parsing: questionMessage(tooLong + [0, 1, 0, 1])) }
        // The limit holds for the decompressed name: a pointer cannot join two halves past it.
        var joined: [UInt8] = [0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0]
        joined += label63 + label63 + label63 + [0, 0, 1, 0, 1]
        joined += label63 + [0xc0, 12, 0, 1, 0, 1]
        #expect(throws: DNSWireError.nameTooLong) { try DNSMessage(parsing: joined) }
        #expect(DomainName(labels: [[UInt8](repeating: 0x61, count: 64)]) == nil)
    }

    @Test func everyTruncationOfAValidMessageIsRefused() {
        for length in 0..<Self.cdnAnswer.count {
            #expect(throws: DNSWireError.self) { try DNSMessage(parsing: Array(Self.cdnAnswer.prefix(length))) }
        }
    }

    @Test func trailingBytesAreRefused() {
        #expect(throws: DNSWireError.trailingBytes) { try DNSMessage(parsing: Self.cdnAnswer + [0]) }
    }

    @Test func rdataThatDoesNotFitItsTypeIsRefused() throws {
        func record(type: UInt16, rdata: [UInt8]) -> [UInt8] {
            [0, 1, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0, 0, UInt8(type >> 8), UInt8(type & 0xff), 0, 1, 0, 0, 0, 60, 0, UInt8(rdata.count)] + rdata
        }
        #expect(throws: DNSWireError.badRecordData) { try DNSMessage(parsing: record(type: 1, rdata: [1, 2, 3, 4, 5])) }
        #expect(throws: DNSWireError.badRecordData) { try DNSMessage(parsing: record(type: 28, rdata: [1, 2, 3, 4])) }
        // A CNAME whose name stops short of its rdata, and one that runs past it.
        #expect(throws: DNSWireError.badRecordData) { try DNSMessage(parsing: record(type: 5, rdata: [1, 0x61, 0, 0])) }
        var overrun = record(type: 5, rdata: [3, 0x61, 0x62, 0x63, 0])
        overrun[22] = 3
        #expect(throws: DNSWireError.self) { try DNSMessage(parsing: overrun) }
        // An MX without its name, an SOA without its numbers.
        #expect(throws: DNSWireError.badRecordData) { try DNSMessage(parsing: record(type: 15, rdata: [0, 10])) }
        #expect(throws: DNSWireError.badRecordData) { try DNSMessage(parsing: record(type: 6, rdata: [0, 0, 1, 2, 3])) }
        // Unknown types are opaque, any length.
        let unknown = try DNSMessage(parsing: record(type: 65280, rdata: [9, 9, 9]))
        #expect(unknown.answers[0].data == .opaque(DNSRecordType(rawValue: 65280), [9, 9, 9]))
        // An A in class CHAOS is not an address.
        var chaos = record(type: 1, rdata: [1, 2, 3, 4, 5])
        chaos[16] = 3
        #expect(try DNSMessage(parsing: chaos).answers[0].data == .opaque(.a, [1, 2, 3, 4, 5]))
    }

    @Test func optOnlyOnceOnlyInTheAdditionalSectionOnlyAtTheRoot() throws {
        let opt: [UInt8] = [0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]
        let header: (Int, Int) -> [UInt8] = { answers, additional in [0, 1, 0, 0, 0, 0, 0, UInt8(answers), 0, 0, 0, UInt8(additional)] }
        #expect(try DNSMessage(parsing: header(0, 1) + opt).edns == EDNS(udpPayloadSize: 4096))
        #expect(throws: DNSWireError.misplacedOPT) { try DNSMessage(parsing: header(1, 0) + opt) }
        #expect(throws: DNSWireError.misplacedOPT) { try DNSMessage(parsing: header(0, 2) + opt + opt) }
        #expect(throws: DNSWireError.misplacedOPT) { try DNSMessage(parsing: header(0, 1) + [1, 0x61] + opt) }
        // Options that overrun the record's data.
        #expect(throws: DNSWireError.badRecordData) { try DNSMessage(parsing: header(0, 1) + [0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 5, 0, 10, 0, 9, 1]) }
    }

    @Test func encodingCompressesRepeatedNames() throws {
        let message = try DNSMessage(parsing: Self.cdnAnswer)
        let encoded = message.encoded()
        // "example" is written once (in the question); every later name ends in a pointer.
        let label = [7] + Array("example".utf8)
        let occurrences = (0...(encoded.count - label.count)).filter { Array(encoded[$0..<($0 + label.count)]) == label }
        #expect(occurrences.count == 1)
        #expect(encoded.count == Self.cdnAnswer.count, "as compact as dnspython's")
        #expect(try DNSMessage(parsing: encoded) == message)
    }

    @Test func presentationFormat() throws {
        #expect(name("WWW.Example.").description == "WWW.Example.")
        #expect(name("www.example") == name("WWW.EXAMPLE."))
        #expect(name("a\\.b.c").labels.count == 2)
        #expect(name("\\000\\255x.y").description == "\\000\\255x.y.")
        #expect(DomainName("a..b") == nil)
        #expect(DomainName("") == nil)
        #expect(DomainName(".") == .root)
        #expect(DomainName("\\256") == nil)
        #expect(DomainName.root.description == ".")
    }
}
