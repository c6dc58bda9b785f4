import Glibc

/// The write side of TUN offloads (GRO, as wireguard-go does it): consecutive TCP segments of
/// one flow that arrive in one batch of datagrams go to the kernel as one super-packet with a
/// virtio-net header, so its stack runs once per run of segments instead of once per segment.
/// Everything else, and every segment that cannot join a run, is written as it came, and a
/// flow's packets keep their order.
public final class TunCoalescer {
    private struct Item {
        var packet: UnsafeMutableRawPointer
        var length: Int
        var next: Int
    }

    private struct Run {
        var head: Int
        var tail: Int
        var count: Int
        var segment: Segment
        /// Payload bytes of all its segments together.
        var payloadTotal: Int
        var nextSequence: UInt32
        /// Still taking segments: a smaller or pushed segment, or one that could not join, ends it.
        var open: Bool
        var pushed: Bool
    }

    /// What a TCP segment's headers say, as far as coalescing needs it.
    struct Segment {
        var ipv4: Bool
        var ipLength: Int
        var headerLength: Int
        var payload: Int
        var sequence: UInt32
        var flags: UInt8
        var isTCP: Bool

        static let notTCP = Segment(ipv4: false, ipLength: 0, headerLength: 0, payload: 0, sequence: 0, flags: 0, isTCP: false)
    }

    static let ack: UInt8 = 0x10
    static let push: UInt8 = 0x08
    static let tcpChecksumOffset = 16
    public let capacity: Int
    private var items: [Item] = []
    private var runs: [Run] = []
    private let vectors: UnsafeMutablePointer<iovec>

    /// `capacity` packets at most between flushes (the size of a receive batch).
    public init(capacity: Int) {
        self.capacity = capacity
        items.reserveCapacity(capacity)
        runs.reserveCapacity(capacity)
        vectors = .allocate(capacity: capacity)
        vectors.initialize(repeating: iovec(), count: capacity)
    }

    deinit { vectors.deallocate() }

    public var isFull: Bool { items.count == capacity }

    /// Takes the IP packet at `packet`, whose memory must stay put until `flush`, with
    /// `TunOffload.headerSize` free bytes in front of it for the virtio-net header.
    public func add(_ packet: UnsafeMutableRawBufferPointer) {
        precondition(!isFull, "flush a full coalescer first")
        let index = items.count
        items.append(Item(packet: packet.baseAddress!, length: packet.count, next: -1))
        let segment = Self.parse(UnsafeRawBufferPointer(packet))
        // Data with ACK (and PSH, which ends a run) may join; any other segment of the flow,
        // a pure ACK included, ends the flow's run so that nothing overtakes it.
        let joinable = segment.isTCP && segment.payload > 0 && segment.flags & ~Self.push == Self.ack
        if segment.isTCP, let r = runs.lastIndex(where: { $0.open && sameFlow($0, packet) }) {
            if joinable && canJoin(r, packet, segment) {
                let run = runs[r]
                let pushed = segment.flags & Self.push != 0
                items[run.tail].next = index
                runs[r].tail = index
                runs[r].count += 1
                runs[r].payloadTotal += segment.payload
                runs[r].nextSequence = segment.sequence &+ UInt32(segment.payload)
                runs[r].pushed = pushed
                runs[r].open = segment.payload == run.segment.payload && !pushed
                return
            }
            runs[r].open = false
        }
        runs.append(Run(head: index, tail: index, count: 1, segment: segment, payloadTotal: segment.payload,
                        nextSequence: segment.sequence &+ UInt32(segment.payload),
                        open: joinable && segment.flags == Self.ack, pushed: false))
    }

    /// Hands each run, in the order the runs began, to `write` as the iovecs of one TUN write
    /// (virtio-net header included), then forgets everything.
    public func flush(_ write: (UnsafeBufferPointer<iovec>) -> Void) {
        for run in runs {
            let head = items[run.head]
            let header = head.packet - TunOffload.headerSize
            if run.count == 1 {
                header.initializeMemory(as: UInt8.self, repeating: 0, count: TunOffload.headerSize)
                vectors[0] = iovec(iov_base: header, iov_len: TunOffload.headerSize + head.length)
                write(UnsafeBufferPointer(start: vectors, count: 1))
                continue
            }
            Self.rewriteHead(head.packet, run)
            vectors[0] = iovec(iov_base: header, iov_len: TunOffload.headerSize + head.length)
            var n = 1
            var i = head.next
            while i >= 0 {
                let item = items[i]
                vectors[n] = iovec(iov_base: item.packet + run.segment.headerLength, iov_len: item.length - run.segment.headerLength)
                n += 1
                i = item.next
            }
            write(UnsafeBufferPointer(start: vectors, count: n))
        }
        items.removeAll(keepingCapacity: true)
        runs.removeAll(keepingCapacity: true)
    }

    // MARK: deciding

    static func parse(_ p: UnsafeRawBufferPointer) -> Segment {
        guard p.count >= 40 else { return .notTCP }
        let ipv4: Bool
        let ipLength: Int
        switch p[0] >> 4 {
        case 4:
            // No options, no fragments, and a length that matches what arrived.
            guard p[0] & 0x0f == 5, p[9] == 6, Int(be16(p, 2)) == p.count, be16(p, 6) & 0x3fff == 0 else { return .notTCP }
            ipv4 = true
            ipLength = 20
        case 6:
            guard p.count >= 60, p[6] == 6, Int(be16(p, 4)) + 40 == p.count else { return .notTCP }
            ipv4 = false
            ipLength = 40
        default:
            return .notTCP
        }
        let tcpLength = Int(p[ipLength + 12] >> 4) * 4
        guard tcpLength >= 20, p.count >= ipLength + tcpLength else { return .notTCP }
        return Segment(ipv4: ipv4, ipLength: ipLength, headerLength: ipLength + tcpLength,
                       payload: p.count - ipLength - tcpLength,
                       sequence: UInt32(bigEndian: p.loadUnaligned(fromByteOffset: ipLength + 4, as: UInt32.self)),
                       flags: p[ipLength + 13], isTCP: true)
    }

    /// Same addresses and ports as the run's first segment.
    private func sameFlow(_ run: Run, _ packet: UnsafeMutableRawBufferPointer) -> Bool {
        let head = items[run.head].packet
        guard run.segment.ipv4 == (packet[0] >> 4 == 4) else { return false }
        let addresses = run.segment.ipv4 ? (12, 8) : (8, 32)
        return memcmp(head + addresses.0, packet.baseAddress! + addresses.0, addresses.1) == 0
            && memcmp(head + run.segment.ipLength, packet.baseAddress! + run.segment.ipLength, 4) == 0
    }

    /// Whether the segment continues the run exactly: next in sequence, no bigger than the
    /// first, the same headers but for length, id, sequence and checksum. Checksums are not
    /// checked: the AEAD has authenticated every byte of the packet, so nothing between the
    /// peers can have corrupted it, and what the peer itself sends it could as well have sent
    /// with a good checksum (the kernel's WireGuard marks decrypted packets
    /// CHECKSUM_UNNECESSARY for the same reason). Checking cost 3.7% of a transfer's cycles.
    private func canJoin(_ r: Int, _ packet: UnsafeMutableRawBufferPointer, _ segment: Segment) -> Bool {
        let run = runs[r]
        let first = run.segment
        guard segment.sequence == run.nextSequence, segment.payload <= first.payload,
              segment.headerLength == first.headerLength,
              first.headerLength + run.payloadTotal + segment.payload <= 65_535 else { return false }
        let head = UnsafeRawBufferPointer(start: items[run.head].packet, count: items[run.head].length)
        let p = UnsafeRawBufferPointer(packet)
        if first.ipv4 {
            // TOS, DF and TTL must match.
            guard p[1] == head[1], p[6] & 0x40 == head[6] & 0x40, p[8] == head[8] else { return false }
        } else {
            // Traffic class, flow label and hop limit.
            guard memcmp(p.baseAddress!, head.baseAddress!, 4) == 0, p[7] == head[7] else { return false }
        }
        // Acknowledgement, header length and options identical; flags (ACK, maybe PSH) checked by the caller.
        let tcp = first.ipLength
        return memcmp(p.baseAddress! + tcp + 8, head.baseAddress! + tcp + 8, 5) == 0
            && memcmp(p.baseAddress! + tcp + 20, head.baseAddress! + tcp + 20, first.headerLength - tcp - 20) == 0
    }

    // MARK: writing

    /// Turns the run's first packet into the header of the whole: lengths, IPv4 checksum, PSH
    /// if the run ended with it, the TCP checksum seeded with the pseudo-header sum as the
    /// kernel leaves it for hardware (NEEDS_CSUM), and the virtio-net header in front.
    private static func rewriteHead(_ packet: UnsafeMutableRawPointer, _ run: Run) {
        let s = run.segment
        let p = UnsafeMutableRawBufferPointer(start: packet, count: s.headerLength)
        let tcpBytes = s.headerLength - s.ipLength + run.payloadTotal
        if s.ipv4 {
            p.storeBytes(of: UInt16(s.headerLength + run.payloadTotal).bigEndian, toByteOffset: 2, as: UInt16.self)
            p.storeBytes(of: 0, toByteOffset: 10, as: UInt16.self)
            let sum = Checksum.add(UnsafeRawBufferPointer(rebasing: p[0..<20]), to: 0)
            p.storeBytes(of: (~Checksum.fold(sum)).bigEndian, toByteOffset: 10, as: UInt16.self)
        } else {
            p.storeBytes(of: UInt16(tcpBytes).bigEndian, toByteOffset: 4, as: UInt16.self)
        }
        if run.pushed { p[s.ipLength + 13] |= push }
        let pseudo = Checksum.pseudoHeader(UnsafeRawBufferPointer(p), ipv4: s.ipv4, protocolNumber: 6, length: tcpBytes)
        p.storeBytes(of: Checksum.fold(pseudo).bigEndian, toByteOffset: s.ipLength + tcpChecksumOffset, as: UInt16.self)
        let header = UnsafeMutableRawBufferPointer(start: packet - TunOffload.headerSize, count: TunOffload.headerSize)
        header[0] = TunOffload.needsChecksum
        header[1] = s.ipv4 ? TunOffload.gsoTCPv4 : TunOffload.gsoTCPv6
        header.storeBytes(of: UInt16(s.headerLength).littleEndian, toByteOffset: 2, as: UInt16.self)
        header.storeBytes(of: UInt16(s.payload).littleEndian, toByteOffset: 4, as: UInt16.self)
        header.storeBytes(of: UInt16(s.ipLength).littleEndian, toByteOffset: 6, as: UInt16.self)
        header.storeBytes(of: UInt16(tcpChecksumOffset).littleEndian, toByteOffset: 8, as: UInt16.self)
    }

    @inline(__always)
    static func be16(_ p: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(bigEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
}
