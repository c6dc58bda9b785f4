import Testing
@testable import WireGuardDevice

/// Frames as the kernel hands them to a TUN with IFF_VNET_HDR, and what our segmentation must
/// make of them: the segments the kernel's own TSO would have sent, checksums finished.
@Suite struct TunOffloadTests {
    static let needsChecksum: UInt8 = 1

    /// A 16-bit one's-complement sum written the slow, obvious way, to check the fast one.
    static func referenceSum(_ bytes: [UInt8]) -> UInt32 {
        var sum: UInt32 = 0
        var i = 0
        while i < bytes.count {
            let high = UInt32(bytes[i]) << 8
            let low = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            sum += high | low
            i += 2
        }
        while sum > 0xffff { sum = (sum & 0xffff) + (sum >> 16) }
        return sum
    }

    static func be16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) << 8 | Int(b[at + 1]) }
    static func be32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
    }

    static func virtioHeader(flags: UInt8, gsoType: UInt8, gsoSize: Int, checksumStart: Int, checksumOffset: Int) -> [UInt8] {
        func le(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
        return [flags, gsoType] + le(0) + le(gsoSize) + le(checksumStart) + le(checksumOffset)
    }

    static func tcpHeader(sequence: UInt32, flags: UInt8) -> [UInt8] {
        [0x9c, 0x40, 0x14, 0x51,                                           // ports 40000 -> 5201
         UInt8(sequence >> 24), UInt8(sequence >> 16 & 0xff), UInt8(sequence >> 8 & 0xff), UInt8(sequence & 0xff),
         0, 0, 0, 1,                                                     // ack
         0x80, flags, 0x01, 0xf5,                                        // 32-byte header (with options), window
         0xde, 0xad, 0, 0,                                               // checksum (junk: must be redone), urgent
         1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]                            // NOP NOP timestamps
    }

    static func ipv4Header(totalLength: Int, identification: Int, protocolNumber: UInt8) -> [UInt8] {
        [0x45, 0, UInt8(totalLength >> 8), UInt8(totalLength & 0xff), UInt8(identification >> 8), UInt8(identification & 0xff),
         0x40, 0, 64, protocolNumber, 0, 0, 192, 0, 2, 1, 203, 0, 113, 7]
    }

    static func ipv6Header(payloadLength: Int, nextHeader: UInt8 = 6) -> [UInt8] {
        [0x60, 0, 0, 0, UInt8(payloadLength >> 8), UInt8(payloadLength & 0xff), nextHeader, 64]
            + [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]
            + [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [7]
    }

    /// Runs `split` with slots of `slotSize` bytes and returns the segments it emitted.
    static func split(_ frame: [UInt8], slotSize: Int = 1500) -> [[UInt8]]? {
        var segments: [[UInt8]] = []
        let slot = UnsafeMutableRawBufferPointer.allocate(byteCount: slotSize, alignment: 16)
        defer { slot.deallocate() }
        let ok = frame.withUnsafeBytes { bytes in
            TunOffload.split(bytes, next: { slot }, emit: { segments.append(Array(slot[0..<$0])) })
        }
        return ok ? segments : nil
    }

    static func tcpChecksumIsValid(_ segment: [UInt8], ipv4: Bool) -> Bool {
        let ipLength = ipv4 ? 20 : 40
        let tcp = Array(segment[ipLength...])
        let addresses = ipv4 ? Array(segment[12..<20]) : Array(segment[8..<40])
        let pseudo = addresses + [0, 6, UInt8(tcp.count >> 8), UInt8(tcp.count & 0xff)]
        return referenceSum(pseudo + tcp) == 0xffff
    }

    @Test func internetChecksumMatchesAKnownHeader() {
        // A classic IPv4 header whose checksum field holds 0xb861.
        let header: [UInt8] = [0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7]
        let sum = header.withUnsafeBytes { Checksum.fold(Checksum.add($0, to: 0)) }
        #expect(~sum == 0xb861)
        // Odd lengths pad with a zero byte, and carries fold back in.
        let odd: [UInt8] = [0xff, 0xff, 0xff, 0xff, 0x01]
        #expect(odd.withUnsafeBytes { Checksum.fold(Checksum.add($0, to: 0)) } == UInt16(Self.referenceSum(odd)))
    }

    /// The machine-order sum against the word-by-word reference: every length from 0 to 80,
    /// every start offset in a word, random bytes, all-ones and all-zero bytes, and an
    /// initial sum carried in.
    @Test func internetChecksumMatchesTheReferenceForAnyLengthAndAlignment() {
        var generator = SystemRandomNumberGenerator()
        for fill in ["random", "ones", "zeros"] {
            for length in 0...80 {
                for start in 0..<8 {
                    let bytes: [UInt8] = (0..<(start + length)).map { _ in
                        fill == "ones" ? 0xff : fill == "zeros" ? 0 : UInt8.random(in: 0...255, using: &generator)
                    }
                    let initial = UInt64.random(in: 0...0xf_ffff, using: &generator)
                    let got = bytes.withUnsafeBytes { Checksum.fold(Checksum.add(UnsafeRawBufferPointer(rebasing: $0[start...]), to: initial)) }
                    var expected = UInt64(Self.referenceSum(Array(bytes[start...]))) + initial
                    while expected > 0xffff { expected = (expected & 0xffff) + (expected >> 16) }
                    // 0 and 0xffff are the same number in one's complement.
                    #expect(got == UInt16(expected) || (got | UInt16(expected)) == 0xffff && got & UInt16(expected) == 0,
                            "\(fill), length \(length), start \(start): \(got) vs \(expected)")
                }
            }
        }
    }

    @Test func ipv4SuperPacketIsCutIntoFinishedSegments() throws {
        let payload = (0..<2500).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let tcp = Self.tcpHeader(sequence: 0xffff_fc00, flags: 0x18 | 0x01 | 0x80)   // PSH ACK FIN CWR
        let ip = Self.ipv4Header(totalLength: 20 + tcp.count + payload.count, identification: 0xfffe, protocolNumber: 6)
        let frame = Self.virtioHeader(flags: Self.needsChecksum, gsoType: 1, gsoSize: 1000, checksumStart: 20, checksumOffset: 16)
            + ip + tcp + payload
        let segments = try #require(Self.split(frame))
        #expect(segments.map(\.count) == [1052, 1052, 552])
        var reassembled: [UInt8] = []
        for (i, s) in segments.enumerated() {
            #expect(Self.be16(s, 2) == s.count)                                      // total length
            #expect(Self.be16(s, 4) == (0xfffe + i) & 0xffff)                        // IP id counts up, wrapping
            #expect(Self.referenceSum(Array(s[0..<20])) == 0xffff)                   // header checksum
            #expect(Self.be32(s, 24) == 0xffff_fc00 &+ UInt32(i * 1000))             // sequence, wrapping
            let flags = s[33]
            #expect(flags & 0x10 != 0)                                               // ACK everywhere
            #expect((flags & 0x09 != 0) == (i == 2))                                 // PSH and FIN only last
            #expect((flags & 0x80 != 0) == (i == 0))                                 // CWR only first
            #expect(Self.tcpChecksumIsValid(s, ipv4: true))
            #expect(Array(s[40..<52]) == tcp[20...].map { $0 })                       // options copied
            reassembled += s[52...]
        }
        #expect(reassembled == payload)
    }

    @Test func ipv6SuperPacketIsCutIntoFinishedSegments() throws {
        let payload = (0..<3001).map { UInt8(truncatingIfNeeded: $0 * 13 + 1) }
        let tcp = Self.tcpHeader(sequence: 42, flags: 0x10)
        let frame = Self.virtioHeader(flags: Self.needsChecksum, gsoType: 4, gsoSize: 1200, checksumStart: 40, checksumOffset: 16)
            + Self.ipv6Header(payloadLength: tcp.count + payload.count) + tcp + payload
        let segments = try #require(Self.split(frame))
        #expect(segments.map(\.count) == [1272, 1272, 673])
        for (i, s) in segments.enumerated() {
            #expect(Self.be16(s, 4) == s.count - 40)                                 // payload length
            #expect(Self.be32(s, 44) == 42 + UInt32(i * 1200))
            #expect(Self.tcpChecksumIsValid(s, ipv4: false))
        }
        #expect(segments.flatMap { $0[72...] } == payload)
    }

    static func udpChecksumIsValid(_ segment: [UInt8], ipv4: Bool) -> Bool {
        let ipLength = ipv4 ? 20 : 40
        let udp = Array(segment[ipLength...])
        let addresses = ipv4 ? Array(segment[12..<20]) : Array(segment[8..<40])
        return udp[6] | udp[7] != 0 && referenceSum(addresses + [0, 17, UInt8(udp.count >> 8), UInt8(udp.count & 0xff)] + udp) == 0xffff
    }

    @Test func udpSuperPacketsAreCutIntoFinishedDatagrams() throws {
        // A UDP_SEGMENT send (QUIC): one header, a payload cut every gso_size bytes, the last shorter.
        for ipv4 in [true, false] {
            let payload = (0..<3100).map { UInt8(truncatingIfNeeded: $0 * 5 + 3) }
            let udp: [UInt8] = [0x1f, 0x90, 0x01, 0xbb, UInt8((8 + payload.count) >> 8), UInt8((8 + payload.count) & 0xff), 0, 0]
            let ip = ipv4 ? Self.ipv4Header(totalLength: 20 + 8 + payload.count, identification: 0xfffe, protocolNumber: 17)
                          : Self.ipv6Header(payloadLength: 8 + payload.count, nextHeader: 17)
            let frame = Self.virtioHeader(flags: Self.needsChecksum, gsoType: 5, gsoSize: 1200, checksumStart: ip.count, checksumOffset: 6)
                + ip + udp + payload
            let segments = try #require(Self.split(frame))
            let ipLength = ip.count
            #expect(segments.map(\.count) == [1200, 1200, 700].map { ipLength + 8 + $0 })
            for (i, s) in segments.enumerated() {
                if ipv4 {
                    #expect(Self.be16(s, 2) == s.count && Self.be16(s, 4) == (0xfffe + i) & 0xffff)
                    #expect(Self.referenceSum(Array(s[0..<20])) == 0xffff)
                } else {
                    #expect(Self.be16(s, 4) == s.count - 40)
                }
                #expect(Self.be16(s, ipLength + 4) == s.count - ipLength)                // UDP length
                #expect(Array(s[ipLength..<(ipLength + 4)]) == Array(udp[0..<4]))         // ports
                #expect(Self.udpChecksumIsValid(s, ipv4: ipv4))
            }
            #expect(segments.flatMap { $0[(ipLength + 8)...] } == payload)
        }
    }

    @Test func unsegmentedPacketGetsItsChecksumFinished() throws {
        // A UDP datagram whose checksum field holds only the pseudo-header sum, as the kernel leaves it.
        let body: [UInt8] = [0x13, 0x88, 0x00, 0x35, 0, 13, 0, 0, 0x68, 0x65, 0x6c, 0x6c, 0x6f]
        var ip = Self.ipv4Header(totalLength: 20 + body.count, identification: 1, protocolNumber: 17)
        let headerSum = ~UInt16(Self.referenceSum(ip))
        ip[10] = UInt8(headerSum >> 8); ip[11] = UInt8(headerSum & 0xff)
        let pseudo = UInt16(Self.referenceSum(Array(ip[12..<20]) + [0, 17, 0, UInt8(body.count)]))
        var udp = body
        udp[6] = UInt8(pseudo >> 8); udp[7] = UInt8(pseudo & 0xff)
        let frame = Self.virtioHeader(flags: Self.needsChecksum, gsoType: 0, gsoSize: 0, checksumStart: 20, checksumOffset: 6) + ip + udp
        let segments = try #require(Self.split(frame))
        #expect(segments.count == 1)
        let packet = segments[0]
        #expect(packet.count == ip.count + udp.count)
        #expect(Self.referenceSum(Array(ip[12..<20]) + [0, 17, 0, UInt8(body.count)] + Array(packet[20...])) == 0xffff)
        // Without NEEDS_CSUM the packet passes through untouched.
        let plain = Self.virtioHeader(flags: 0, gsoType: 0, gsoSize: 0, checksumStart: 0, checksumOffset: 0) + ip + body
        #expect(Self.split(plain) == [ip + body])
    }

    @Test func framesWeCannotCutAreRefused() {
        let tcp = Self.tcpHeader(sequence: 1, flags: 0x10)
        let v4 = Self.ipv4Header(totalLength: 20 + tcp.count + 100, identification: 1, protocolNumber: 6) + tcp + [UInt8](repeating: 1, count: 100)
        // Too short for a header; a TCPv6 GSO type over an IPv4 packet; UDP under TSO; zero segment size;
        // a checksum field beyond the packet; a segment that does not fit the slot.
        #expect(Self.split([1, 2, 3]) == nil)
        #expect(Self.split(Self.virtioHeader(flags: 1, gsoType: 4, gsoSize: 50, checksumStart: 20, checksumOffset: 16) + v4) == nil)
        let udp = Self.ipv4Header(totalLength: 20 + tcp.count, identification: 1, protocolNumber: 17) + tcp
        #expect(Self.split(Self.virtioHeader(flags: 1, gsoType: 1, gsoSize: 50, checksumStart: 20, checksumOffset: 16) + udp) == nil)
        // TCP under UDP segmentation.
        #expect(Self.split(Self.virtioHeader(flags: 1, gsoType: 5, gsoSize: 50, checksumStart: 20, checksumOffset: 6) + v4) == nil)
        #expect(Self.split(Self.virtioHeader(flags: 1, gsoType: 1, gsoSize: 0, checksumStart: 20, checksumOffset: 16) + v4) == nil)
        #expect(Self.split(Self.virtioHeader(flags: 1, gsoType: 0, gsoSize: 0, checksumStart: 20, checksumOffset: 200) + v4) == nil)
        #expect(Self.split(Self.virtioHeader(flags: 1, gsoType: 1, gsoSize: 100, checksumStart: 20, checksumOffset: 16) + v4, slotSize: 100) == nil)
    }
}
