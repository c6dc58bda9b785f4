import Addresses
import CLinux
import Descriptors
import Glibc

/// One datagram to send: to `destination`, on the socket of the queue it is in; from
/// `source` where the socket may send from an address it is not bound to (a steered DNS
/// answer, sent from the address its query was sent to).
public struct OutgoingDatagram {
    public var bytes: [UInt8]
    public var destination: Endpoint
    public var source: IPAddress? = nil

    public init(bytes: [UInt8], destination: Endpoint, source: IPAddress? = nil) {
        (self.bytes, self.destination, self.source) = (bytes, destination, source)
    }
}

/// What a steered query's control messages say: the address it was sent to and its mark.
public struct ReceivedControl {
    public var asked: IPAddress?
    public var mark: UInt32?

    public init(asked: IPAddress? = nil, mark: UInt32? = nil) { (self.asked, self.mark) = (asked, mark) }
}

/// Datagrams to send, by socket, in the order they were queued.
public struct DatagramQueue {
    public private(set) var sockets: [(fd: DescriptorNumber, datagrams: [OutgoingDatagram])] = []

    public var isEmpty: Bool { sockets.isEmpty }

    public init() {}

    public mutating func append(_ datagram: OutgoingDatagram, on fd: DescriptorNumber) {
        if let index = sockets.firstIndex(where: { $0.fd == fd }) {
            sockets[index].datagrams.append(datagram)
        } else {
            sockets.append((fd, [datagram]))
        }
    }
}

/// recvmmsg and sendmmsg for the DNS proxies' UDP sockets: a burst of queries or answers
/// costs one system call each way, not one per datagram. The storage is allocated once and
/// shared by every proxy (they all run on vpnd's one thread). A slot holds the largest UDP
/// payload, so nothing is ever truncated; pages of a slot no datagram reached are never
/// touched and cost no memory.
public final class DatagramIO {
    public static let burst = 64
    private static let slotSize = 65536
    private let storage: UnsafeMutableRawPointer
    private let headers: UnsafeMutablePointer<vx_mmsghdr>
    private let iovecs: UnsafeMutablePointer<iovec>
    private let names: UnsafeMutablePointer<sockaddr_storage>
    private let controls: UnsafeMutableRawPointer
    private static let controlSize = 64

    public init() {
        storage = .allocate(byteCount: Self.burst * Self.slotSize, alignment: 64)
        headers = .allocate(capacity: Self.burst)
        headers.initialize(repeating: vx_mmsghdr(), count: Self.burst)
        iovecs = .allocate(capacity: Self.burst)
        iovecs.initialize(repeating: iovec(), count: Self.burst)
        names = .allocate(capacity: Self.burst)
        names.initialize(repeating: sockaddr_storage(), count: Self.burst)
        precondition(vx_steered_cmsg_space() <= Self.controlSize)
        controls = .allocate(byteCount: Self.burst * Self.controlSize, alignment: 16)
    }

    deinit {
        storage.deallocate()
        headers.deallocate()
        iovecs.deallocate()
        names.deallocate()
        controls.deallocate()
    }

    private func prepare(_ i: Int, length: Int, nameLength: socklen_t, controlLength: Int = 0) {
        iovecs[i] = iovec(iov_base: storage + i * Self.slotSize, iov_len: length)
        headers[i].msg_hdr = msghdr()
        headers[i].msg_hdr.msg_name = UnsafeMutableRawPointer(names + i)
        headers[i].msg_hdr.msg_namelen = nameLength
        headers[i].msg_hdr.msg_iov = iovecs + i
        headers[i].msg_hdr.msg_iovlen = 1
        if controlLength > 0 {
            headers[i].msg_hdr.msg_control = controls + i * Self.controlSize
            headers[i].msg_hdr.msg_controllen = controlLength
        }
        headers[i].msg_len = 0
    }

    /// Up to `burst` datagrams waiting on `fd` (non-blocking), each handed to `body` with
    /// its sender; how many there were.
    @discardableResult
    public func receive(_ fd: DescriptorNumber, _ body: ([UInt8], Endpoint) -> Void) -> Int {
        receive(fd, control: false) { bytes, from, _ in body(bytes, from) }
    }

    /// As above, with what each datagram's control messages say (the socket asked for
    /// IP_PKTINFO and SO_RCVMARK).
    @discardableResult
    public func receive(_ fd: DescriptorNumber, control: Bool, _ body: ([UInt8], Endpoint, ReceivedControl) -> Void) -> Int {
        for i in 0..<Self.burst {
            prepare(i, length: Self.slotSize, nameLength: socklen_t(MemoryLayout<sockaddr_storage>.size), controlLength: control ? Self.controlSize : 0)
        }
        let count = retryingInterrupted { vx_recvmmsg(fd.raw, headers, UInt32(Self.burst), Int32(MSG_DONTWAIT)) }
        guard count > 0 else { return 0 }
        for i in 0..<Int(count) {
            guard let from = try? Endpoint(sockaddr: names + i, length: headers[i].msg_hdr.msg_namelen) else { continue }
            let bytes = UnsafeRawBufferPointer(start: storage + i * Self.slotSize, count: Int(headers[i].msg_len))
            var received = ReceivedControl()
            if control {
                var asked = [UInt8](repeating: 0, count: 16), mark: UInt32 = 0
                let found = vx_steered_cmsgs(&headers[i].msg_hdr, &asked, &mark)
                if found & 1 != 0 { received.asked = IPAddress(bytes: asked.prefix(4)) }
                if found & 4 != 0 { received.asked = IPAddress(bytes: asked) }
                if found & 2 != 0 { received.mark = mark }
            }
            body(Array(bytes), from, received)
        }
        return Int(count)
    }

    /// Sends everything queued, `burst` datagrams a system call. Returns the datagrams the
    /// kernel refused at once (no route, a firewall's EPERM), by socket; a datagram lost
    /// later, or to a full socket buffer, is lost as UDP is and not reported.
    @discardableResult
    public func send(_ queue: DatagramQueue) -> [(fd: DescriptorNumber, datagram: OutgoingDatagram)] {
        var refused: [(fd: DescriptorNumber, datagram: OutgoingDatagram)] = []
        for (fd, datagrams) in queue.sockets {
            var start = 0
            while start < datagrams.count {
                let chunk = datagrams[start..<min(datagrams.count, start + Self.burst)]
                for (i, datagram) in chunk.enumerated() {
                    datagram.bytes.withUnsafeBytes { bytes in
                        if let base = bytes.baseAddress { storage.advanced(by: i * Self.slotSize).copyMemory(from: base, byteCount: bytes.count) }
                    }
                    let nameLength = datagram.destination.store(into: names + i)
                    if let source = datagram.source?.bytes {
                        let length = vx_source_cmsg(controls + i * Self.controlSize, source, source.count)
                        prepare(i, length: datagram.bytes.count, nameLength: nameLength, controlLength: length)
                    } else {
                        prepare(i, length: datagram.bytes.count, nameLength: nameLength)
                    }
                }
                var sent = 0
                while sent < chunk.count {
                    let count = retryingInterrupted { vx_sendmmsg(fd.raw, headers + sent, UInt32(chunk.count - sent), Int32(MSG_NOSIGNAL)) }
                    if count > 0 {
                        sent += Int(count)
                    } else {
                        // The kernel refuses the first datagram left: skip it, send the rest.
                        if count < 0 && errno != EAGAIN && errno != ENOBUFS { refused.append((fd, chunk[chunk.startIndex + sent])) }
                        sent += 1
                    }
                }
                start += chunk.count
            }
        }
        return refused
    }
}
