import Addresses
import CLinux
import Descriptors
import Glibc
import WireGuard

/// Preallocated message headers, iovecs, address and control storage for recvmmsg/sendmmsg,
/// so the per-packet path allocates nothing: slot i's data lives at `slot(i)`.
///
/// Sending, consecutive datagrams to one destination of one size (the last of a run may be
/// shorter) leave as one UDP_SEGMENT message when the socket segments. Receiving on a socket
/// that coalesces, a slot may hold a run of datagrams: `segmentSize(i)` tells where to cut.
public final class DatagramBatch: @unchecked Sendable {
    public let capacity: Int
    public let slotSize: Int
    /// Bytes before each slot's payload (room for the transport header when encrypting in place).
    public let headroom: Int
    let storage: UnsafeMutableRawBufferPointer
    let headers: UnsafeMutablePointer<vx_mmsghdr>
    let iovecs: UnsafeMutablePointer<iovec>
    let addresses: UnsafeMutablePointer<sockaddr_in6>
    /// One control message per header: UDP_SEGMENT out, UDP_GRO in.
    let controls: UnsafeMutableRawPointer
    let controlSpace: Int
    /// The first datagram of each message a flush builds, to resend them one by one if the
    /// kernel refuses segmentation.
    let messageStarts: UnsafeMutablePointer<Int>
    /// Datagrams enqueued for the next `flush`.
    public var count = 0
    private var nameLength = socklen_t(MemoryLayout<sockaddr_in6>.size)

    /// The most datagrams one segmented send may carry (the kernel's UDP_MAX_SEGMENTS is 64
    /// before Linux 6.9), and its most bytes (an IP packet's length field, less headers).
    static let maxSegments = 64
    static let maxSegmentedBytes = 65_000

    public init(capacity: Int, slotSize: Int, headroom: Int) {
        self.capacity = capacity
        self.slotSize = slotSize
        self.headroom = headroom
        storage = .allocate(byteCount: capacity * slotSize, alignment: 64)
        headers = .allocate(capacity: capacity)
        iovecs = .allocate(capacity: capacity)
        addresses = .allocate(capacity: capacity)
        controlSpace = vx_udp_offload_cmsg_space()
        controls = .allocate(byteCount: capacity * controlSpace, alignment: 8)
        controls.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * controlSpace)
        messageStarts = .allocate(capacity: capacity)
        messageStarts.initialize(repeating: 0, count: capacity)
        headers.initialize(repeating: vx_mmsghdr(), count: capacity)
        iovecs.initialize(repeating: iovec(), count: capacity)
        addresses.initialize(repeating: sockaddr_in6(), count: capacity)
    }

    deinit {
        storage.deallocate()
        headers.deallocate()
        iovecs.deallocate()
        addresses.deallocate()
        controls.deallocate()
        messageStarts.deallocate()
    }

    /// The whole slot `i` (headroom included).
    @inline(__always)
    public func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[(i * slotSize)..<((i + 1) * slotSize)])
    }

    // MARK: receiving

    /// Receives up to `capacity` datagrams (or coalesced runs) into the slots (each at
    /// offset `headroom`), blocking for the first. Returns how many arrived, or nil when the
    /// socket failed.
    public func receive(from socket: UDPSocket) -> Int? {
        for i in 0..<capacity {
            iovecs[i].iov_base = slot(i).baseAddress! + headroom
            iovecs[i].iov_len = slotSize - headroom
            headers[i].msg_hdr = msghdr()
            headers[i].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + i)
            headers[i].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in6>.size)
            headers[i].msg_hdr.msg_iov = iovecs + i
            headers[i].msg_hdr.msg_iovlen = 1
            if socket.receivesCoalesced {
                headers[i].msg_hdr.msg_control = controls + i * controlSpace
                headers[i].msg_hdr.msg_controllen = controlSpace
            }
            headers[i].msg_len = 0
        }
        let n = retryingInterrupted { vx_recvmmsg(socket.fd, headers, UInt32(capacity), vx_msg_waitforone()) }
        return n >= 0 ? Int(n) : nil
    }

    /// Length of received datagram (or run) `i`.
    @inline(__always)
    public func receivedLength(_ i: Int) -> Int { Int(headers[i].msg_len) }

    /// Where to cut received slot `i` into datagrams: the kernel's segment size for a
    /// coalesced run, else its whole length.
    @inline(__always)
    public func segmentSize(_ i: Int) -> Int {
        let length = receivedLength(i)
        guard headers[i].msg_hdr.msg_controllen > 0 else { return length }
        let size = Int(vx_udp_gro_size(&headers[i].msg_hdr))
        return size > 0 ? size : length
    }

    /// Sender of received datagram `i`.
    @inline(__always)
    public func sender(_ i: Int) -> Endpoint? {
        (try? Endpoint(sockaddr: addresses + i, length: headers[i].msg_hdr.msg_namelen))?.unmapped
    }

    // MARK: sending

    /// Queues slot `i`'s bytes `range` (relative to the slot) for `destination`. An IPv6
    /// destination for a socket that is IPv4 only is dropped, as `UDPSocket.send` drops it.
    @inline(__always)
    public func enqueue(slot i: Int, range: Range<Int>, to destination: Endpoint, dualStack: Bool) {
        guard dualStack || destination.address.isIPv4 else { return }
        iovecs[count].iov_base = slot(i).baseAddress! + range.lowerBound
        iovecs[count].iov_len = range.count
        nameLength = destination.store(into: addresses + count, mappingIPv4: dualStack)
        count += 1
    }

    /// Sends everything enqueued with as few system calls, and as few kernel buffers, as
    /// the socket allows.
    public func flush(to socket: UDPSocket) {
        defer { count = 0 }
        guard count > 0 else { return }
        if socket.segmentsSends {
            let messages = buildSegmented()
            if let refused = send(messages: messages, to: socket, segmented: true) {
                // EIO: the route cannot segment (no checksum offload on the way). Everything
                // from the refused message on goes again, datagram by datagram.
                socket.stopSegmenting()
                buildSingles(from: messageStarts[refused])
                _ = send(messages: count - messageStarts[refused], to: socket, segmented: false)
            }
        } else {
            buildSingles(from: 0)
            _ = send(messages: count, to: socket, segmented: false)
        }
    }

    /// One message per datagram from `first` on, in headers 0...
    private func buildSingles(from first: Int) {
        for k in first..<count {
            let m = k - first
            headers[m].msg_hdr = msghdr()
            headers[m].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + k)
            headers[m].msg_hdr.msg_namelen = nameLength
            headers[m].msg_hdr.msg_iov = iovecs + k
            headers[m].msg_hdr.msg_iovlen = 1
        }
    }

    /// Groups the datagrams into segmented messages; returns how many messages.
    private func buildSegmented() -> Int {
        var messages = 0
        var k = 0
        while k < count {
            let start = k
            let size = iovecs[k].iov_len
            var total = size
            k += 1
            while k < count, k - start < Self.maxSegments, iovecs[k].iov_len <= size,
                  total + iovecs[k].iov_len <= Self.maxSegmentedBytes,
                  memcmp(addresses + k, addresses + start, Int(nameLength)) == 0 {
                total += iovecs[k].iov_len
                k += 1
                // A shorter datagram can only be a run's last.
                if iovecs[k - 1].iov_len < size { break }
            }
            messageStarts[messages] = start
            headers[messages].msg_hdr = msghdr()
            headers[messages].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + start)
            headers[messages].msg_hdr.msg_namelen = nameLength
            headers[messages].msg_hdr.msg_iov = iovecs + start
            headers[messages].msg_hdr.msg_iovlen = k - start
            if k - start > 1 {
                let control = controls + messages * controlSpace
                headers[messages].msg_hdr.msg_control = control
                headers[messages].msg_hdr.msg_controllen = vx_udp_segment_cmsg(control, UInt16(size))
            }
            messages += 1
        }
        return messages
    }

    /// Sends headers 0..<messages; returns the index of a segmented message the kernel
    /// refused with EIO (nothing after it was sent), else nil.
    private func send(messages: Int, to socket: UDPSocket, segmented: Bool) -> Int? {
        var sent = 0
        while sent < messages {
            let n = retryingInterrupted { vx_sendmmsg(socket.fd, headers + sent, UInt32(messages - sent), 0) }
            if n > 0 { sent += Int(n); continue }
            if n < 0 && errno == EIO && segmented && headers[sent].msg_hdr.msg_controllen > 0 { return sent }
            // A datagram the kernel refuses (no route, EPERM from a firewall) is lost like
            // any UDP datagram; skip it rather than spin.
            sent += 1
        }
        return nil
    }
}
