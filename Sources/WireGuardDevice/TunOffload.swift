/// TUN offloads (IFF_VNET_HDR with TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4 |
/// TUN_F_USO6), as wireguard-go uses them: the kernel hands us TCP and UDP "super-packets"
/// of up to 64 KiB with a virtio-net header instead of one read per MTU-sized packet, and
/// leaves checksums for us to finish. We cut them into the segments the kernel would have
/// sent, with finished checksums, because each segment is encrypted on its own and the
/// peer's kernel checks them.
public enum TunOffload {
    /// struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset.
    public static let headerSize = 10
    static let needsChecksum: UInt8 = 1
    static let gsoNone: UInt8 = 0
    static let gsoTCPv4: UInt8 = 1
    static let gsoTCPv6: UInt8 = 4
    /// UDP segmentation (UDP_SEGMENT senders: QUIC), both IP versions.
    static let gsoUDP: UInt8 = 5
    static let gsoECN: UInt8 = 0x80

    /// Cuts the frame read from TUN (virtio-net header, then the packet) into IP packets.
    /// `next` gives the memory for the next segment (at least MTU + headers), `emit` is
    /// told its length. Returns false for a frame we cannot handle (it is dropped).
    @inline(__always)
    public static func split(_ frame: UnsafeRawBufferPointer, next: () -> UnsafeMutableRawBufferPointer?,
                             emit: (Int) -> Void) -> Bool {
        guard frame.count > headerSize else { return false }
        let flags = frame[0]
        let gsoType = frame[1] & ~gsoECN
        let gsoSize = Int(frame.loadUnaligned(fromByteOffset: 4, as: UInt16.self).littleEndian)
        let checksumStart = Int(frame.loadUnaligned(fromByteOffset: 6, as: UInt16.self).littleEndian)
        let checksumOffset = Int(frame.loadUnaligned(fromByteOffset: 8, as: UInt16.self).littleEndian)
        let packet = UnsafeRawBufferPointer(rebasing: frame[headerSize...])
        if gsoType == gsoNone {
            guard let out = next(), out.count >= packet.count else { return false }
            out.copyMemory(from: packet)
            if flags & needsChecksum != 0 {
                // The kernel seeded the field with the pseudo-header sum; we add the rest.
                let field = checksumStart + checksumOffset
                guard field + 2 <= packet.count, checksumStart < packet.count else { return false }
                let sum = Checksum.add(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[checksumStart..<packet.count]), to: 0)
                out.storeBytes(of: (~Checksum.fold(sum)).bigEndian, toByteOffset: field, as: UInt16.self)
            }
            emit(packet.count)
            return true
        }
        guard gsoType == gsoTCPv4 || gsoType == gsoTCPv6 || gsoType == gsoUDP, gsoSize > 0, !packet.isEmpty else { return false }
        let ipv4 = packet[0] >> 4 == 4
        let udp = gsoType == gsoUDP
        guard udp || ipv4 == (gsoType == gsoTCPv4) else { return false }
        let ipLength = ipv4 ? Int(packet[0] & 0x0f) * 4 : 40
        let protocolNumber: UInt8 = udp ? 17 : 6
        // Segmentation only ever covers plain TCP or UDP: IPv6 extension headers are not
        // expected here.
        guard ipLength >= 20, packet.count >= ipLength + (udp ? 8 : 20),
              packet[ipv4 ? 9 : 6] == protocolNumber else { return false }
        let transportLength = udp ? 8 : Int(packet[ipLength + 12] >> 4) * 4
        let headerLength = ipLength + transportLength
        guard transportLength >= (udp ? 8 : 20), packet.count >= headerLength else { return false }
        let payload = packet.count - headerLength
        let sequence = udp ? 0 : UInt32(bigEndian: packet.loadUnaligned(fromByteOffset: ipLength + 4, as: UInt32.self))
        let identification = ipv4 ? UInt16(bigEndian: packet.loadUnaligned(fromByteOffset: 4, as: UInt16.self)) : 0
        let originalFlags = udp ? 0 : packet[ipLength + 13]
        // The checksum field: TCP's at 16, UDP's at 6.
        let checksumField = ipLength + (udp ? 6 : 16)
        var offset = 0
        var index = 0
        while offset < payload || (payload == 0 && index == 0) {
            let chunk = min(gsoSize, payload - offset)
            guard let out = next(), out.count >= headerLength + chunk else { return false }
            let base = out.baseAddress!
            base.copyMemory(from: packet.baseAddress!, byteCount: headerLength)
            (base + headerLength).copyMemory(from: packet.baseAddress! + headerLength + offset, byteCount: chunk)
            if ipv4 {
                out.storeBytes(of: UInt16(headerLength + chunk).bigEndian, toByteOffset: 2, as: UInt16.self)
                out.storeBytes(of: (identification &+ UInt16(truncatingIfNeeded: index)).bigEndian, toByteOffset: 4, as: UInt16.self)
                out.storeBytes(of: 0, toByteOffset: 10, as: UInt16.self)
                let headerSum = Checksum.add(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<ipLength]), to: 0)
                out.storeBytes(of: (~Checksum.fold(headerSum)).bigEndian, toByteOffset: 10, as: UInt16.self)
            } else {
                out.storeBytes(of: UInt16(transportLength + chunk).bigEndian, toByteOffset: 4, as: UInt16.self)
            }
            if udp {
                out.storeBytes(of: UInt16(8 + chunk).bigEndian, toByteOffset: ipLength + 4, as: UInt16.self)
            } else {
                let last = offset + chunk >= payload
                out.storeBytes(of: (sequence &+ UInt32(truncatingIfNeeded: offset)).bigEndian, toByteOffset: ipLength + 4, as: UInt32.self)
                var tcpFlags = originalFlags
                if !last { tcpFlags &= ~0x09 }          // FIN and PSH only on the last segment
                if index > 0 { tcpFlags &= ~0x80 }      // CWR only on the first
                out.storeBytes(of: tcpFlags, toByteOffset: ipLength + 13, as: UInt8.self)
            }
            out.storeBytes(of: 0, toByteOffset: checksumField, as: UInt16.self)
            let segment = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<(headerLength + chunk)])
            let sum = Checksum.pseudoHeader(segment, ipv4: ipv4, protocolNumber: protocolNumber, length: transportLength + chunk)
            var checksum = ~Checksum.fold(Checksum.add(UnsafeRawBufferPointer(rebasing: segment[ipLength...]), to: sum))
            // UDP sends a computed zero as all ones (zero means "no checksum").
            if udp && checksum == 0 { checksum = 0xffff }
            out.storeBytes(of: checksum.bigEndian, toByteOffset: checksumField, as: UInt16.self)
            emit(headerLength + chunk)
            offset += chunk
            index += 1
            if payload == 0 { break }
        }
        return true
    }
}

/// The Internet checksum (RFC 1071), summed 32 bits at a time.
public enum Checksum {
    /// `initial` plus the big-endian 16-bit words of `bytes` (an odd last byte padded with
    /// zero), unfolded. The words are summed in the machine's order, 8 bytes a step, and the
    /// folded sum swapped once at the end: a one's complement sum is the same in either byte
    /// order (RFC 1071, 2.B). Every segment cut from a super-packet is summed with it.
    @inline(__always)
    public static func add(_ bytes: UnsafeRawBufferPointer, to initial: UInt64) -> UInt64 {
        var sum: UInt64 = 0
        var i = 0
        let n = bytes.count
        // Two 32-bit halves per load: no carry is lost below 2^32 loads.
        while i + 8 <= n {
            let word = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            sum &+= (word & 0xffff_ffff) &+ (word >> 32)
            i += 8
        }
        if i + 4 <= n {
            sum &+= UInt64(bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self))
            i += 4
        }
        if i + 2 <= n {
            sum &+= UInt64(bytes.loadUnaligned(fromByteOffset: i, as: UInt16.self))
            i += 2
        }
        // The last byte as a machine-order load of [byte, 0] would read it.
        if i < n { sum &+= UInt64(UInt16(bigEndian: UInt16(bytes[i]) << 8)) }
        return initial &+ UInt64(UInt16(bigEndian: fold(sum)))
    }

    @inline(__always)
    public static func fold(_ sum: UInt64) -> UInt16 {
        var s = sum
        while s >> 16 != 0 { s = (s & 0xffff) + (s >> 16) }
        return UInt16(s)
    }

    /// The sum of the pseudo-header for a TCP/UDP segment of `length` bytes.
    @inline(__always)
    public static func pseudoHeader(_ packet: UnsafeRawBufferPointer, ipv4: Bool, protocolNumber: UInt8, length: Int) -> UInt64 {
        let addresses = ipv4 ? UnsafeRawBufferPointer(rebasing: packet[12..<20]) : UnsafeRawBufferPointer(rebasing: packet[8..<40])
        return add(addresses, to: UInt64(protocolNumber) + UInt64(length))
    }
}
