import Glibc
import Testing
@testable import WireGuardDevice

/// Segments decrypted in one batch, and the TUN writes the coalescer makes of them: every
/// write, cut again by `TunOffload.split` (what the kernel's GSO would do), must give back
/// exactly the segments that went in, in order.
@Suite struct TunCoalescerTests {
    typealias T = TunOffloadTests

    struct Flow {
        var ipv4: Bool
        var port: UInt16
        var sequence: UInt32 = 1000
        var identification = 7

        /// The next segment of the flow, with valid checksums, advancing sequence and IP id.
        mutating func next(_ size: Int, flags: UInt8 = 0x10, badChecksum: Bool = false) -> [UInt8] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(sequence)) }
            var tcp = T.tcpHeader(sequence: sequence, flags: flags)
            tcp[0] = UInt8(port >> 8); tcp[1] = UInt8(port & 0xff)
            tcp[16] = 0; tcp[17] = 0
            var ip = ipv4 ? T.ipv4Header(totalLength: 20 + tcp.count + size, identification: identification, protocolNumber: 6)
                          : T.ipv6Header(payloadLength: tcp.count + size)
            if ipv4 {
                let sum = ~UInt16(T.referenceSum(ip))
                ip[10] = UInt8(sum >> 8); ip[11] = UInt8(sum & 0xff)
            }
            let addresses = ipv4 ? Array(ip[12..<20]) : Array(ip[8..<40])
            let length = tcp.count + size
            var sum = ~UInt16(T.referenceSum(addresses + [0, 6, UInt8(length >> 8), UInt8(length & 0xff)] + tcp + payload))
            if badChecksum { sum &+= 1 }
            tcp[16] = UInt8(sum >> 8); tcp[17] = UInt8(sum & 0xff)
            sequence &+= UInt32(size)
            identification += 1
            return ip + tcp + payload
        }
    }

    /// Feeds the packets to a coalescer (each in its own buffer with headroom, as in a receive
    /// batch) and returns the bytes of each write.
    static func coalesce(_ packets: [[UInt8]]) -> [[UInt8]] {
        let coalescer = TunCoalescer(capacity: 64)
        let buffers = packets.map { p -> UnsafeMutableRawBufferPointer in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 + p.count, alignment: 16)
            b.initializeMemory(as: UInt8.self, repeating: 0xee)
            UnsafeMutableRawBufferPointer(rebasing: b[16...]).copyBytes(from: p)
            return b
        }
        defer { buffers.forEach { $0.deallocate() } }
        for b in buffers { coalescer.add(UnsafeMutableRawBufferPointer(rebasing: b[16...])) }
        var writes: [[UInt8]] = []
        coalescer.flush { vectors in
            writes.append(vectors.flatMap { Array(UnsafeRawBufferPointer(start: $0.iov_base, count: $0.iov_len)) })
        }
        return writes
    }

    static func plain(_ packet: [UInt8]) -> [UInt8] { [UInt8](repeating: 0, count: 10) + packet }

    /// Finishes the TCP checksum as the kernel does for NEEDS_CSUM and tells whether it holds.
    static func seededChecksumCompletes(_ frame: [UInt8], ipv4: Bool) -> Bool {
        var packet = Array(frame[10...])
        let ipLength = ipv4 ? 20 : 40
        let finished = ~UInt16(T.referenceSum(Array(packet[ipLength...])))
        packet[ipLength + 16] = UInt8(finished >> 8); packet[ipLength + 17] = UInt8(finished & 0xff)
        return T.tcpChecksumIsValid(packet, ipv4: ipv4)
    }

    @Test func interleavedFlowsBecomeOneWriteEachAndSplitBackExactly() throws {
        var a = Flow(ipv4: true, port: 40000)
        var b = Flow(ipv4: false, port: 40001)
        let a1 = a.next(1000), b1 = b.next(1200), a2 = a.next(1000), a3 = a.next(1000)
        let b2 = b.next(1200), a4 = a.next(400, flags: 0x18), b3 = b.next(1200)
        let udp = T.ipv4Header(totalLength: 28, identification: 1, protocolNumber: 17) + [0, 53, 0, 53, 0, 8, 0, 0]
        let writes = Self.coalesce([a1, b1, a2, udp, a3, b2, a4, b3])
        #expect(writes.count == 3)
        #expect(try #require(T.split(writes[0])) == [a1, a2, a3, a4])
        #expect(try #require(T.split(writes[1])) == [b1, b2, b3])
        #expect(writes[2] == Self.plain(udp))
        // The virtio-net header: NEEDS_CSUM, TCPv4/TCPv6, header length, segment size, checksum start and offset.
        #expect(Array(writes[0][0..<10]) == [1, 1, 52, 0, 0xe8, 0x03, 20, 0, 16, 0])
        #expect(Array(writes[1][0..<10]) == [1, 4, 72, 0, 0xb0, 0x04, 40, 0, 16, 0])
        #expect(T.be16(Array(writes[0][10...]), 2) == 52 + 3400)
        #expect(T.referenceSum(Array(writes[0][10..<30])) == 0xffff)
        #expect(writes[0][10 + 33] & 0x08 != 0)                         // the run ended with PSH
        #expect(Self.seededChecksumCompletes(writes[0], ipv4: true))
        #expect(Self.seededChecksumCompletes(writes[1], ipv4: false))
    }

    /// Each segment was authenticated by the AEAD, so its own TCP checksum does not decide
    /// whether it joins (the kernel's WireGuard trusts decrypted packets too): the run becomes
    /// one write whose checksum the kernel finishes over the whole payload.
    @Test func aSegmentJoinsWhateverItsOwnChecksumSays() throws {
        var c = Flow(ipv4: true, port: 40002)
        let c1 = c.next(1000), c2 = c.next(1000, badChecksum: true), c3 = c.next(1000)
        let writes = Self.coalesce([c1, c2, c3])
        #expect(writes.count == 1)
        #expect(try #require(T.split(writes[0])).map { Array($0[52...]) } == [c1, c2, c3].map { Array($0[52...]) })
        #expect(Self.seededChecksumCompletes(writes[0], ipv4: true))
    }

    @Test func aGapOrAPureAckEndsTheRunInOrder() {
        var a = Flow(ipv4: true, port: 40000)
        let a1 = a.next(1000)
        _ = a.next(1000)                                                // lost: a gap
        let a3 = a.next(1000)
        #expect(Self.coalesce([a1, a3]) == [Self.plain(a1), Self.plain(a3)])

        var d = Flow(ipv4: false, port: 40003)
        let d1 = d.next(1000), ack = d.next(0), d2 = d.next(1000)
        #expect(Self.coalesce([d1, ack, d2]) == [Self.plain(d1), Self.plain(ack), Self.plain(d2)])
    }

    @Test func aShorterSegmentEndsTheRun() throws {
        var a = Flow(ipv4: true, port: 40000)
        let a1 = a.next(1000), a2 = a.next(500), a3 = a.next(1000), a4 = a.next(1000)
        let writes = Self.coalesce([a1, a2, a3, a4])
        #expect(writes.count == 2)
        #expect(try #require(T.split(writes[0])) == [a1, a2])
        #expect(try #require(T.split(writes[1])) == [a3, a4])
    }
}
