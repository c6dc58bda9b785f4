import Addresses
import CLinux
import Glibc
import Synchronization
import WireGuard

/// The engine's endpoints as socket addresses.
extension Endpoint {
    /// As a sockaddr_in6 for a dual-stack socket (IPv4 as ::ffff:a.b.c.d).
    func storeV6(into storage: UnsafeMutablePointer<sockaddr_in6>) {
        storage.pointee = sockaddr_in6()
        storage.pointee.sin6_family = sa_family_t(AF_INET6)
        storage.pointee.sin6_port = port.bigEndian
        let bytes: [UInt8]
        switch address {
        case .v4: bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + address.bytes
        case .v6: bytes = address.bytes
        }
        withUnsafeMutableBytes(of: &storage.pointee.sin6_addr) { $0.copyBytes(from: bytes) }
    }

    func storeV4(into storage: UnsafeMutablePointer<sockaddr_in>) {
        storage.pointee = sockaddr_in()
        storage.pointee.sin_family = sa_family_t(AF_INET)
        storage.pointee.sin_port = port.bigEndian
        if case let .v4(v) = address { storage.pointee.sin_addr.s_addr = v.bigEndian }
    }

    /// From a sockaddr_in or sockaddr_in6 the kernel filled (v4-mapped IPv6 becomes IPv4).
    init?(_ raw: UnsafeRawPointer) {
        let family = raw.load(as: sa_family_t.self)
        if family == sa_family_t(AF_INET) {
            let sin = raw.load(as: sockaddr_in.self)
            self.init(address: .v4(UInt32(bigEndian: sin.sin_addr.s_addr)), port: UInt16(bigEndian: sin.sin_port))
        } else if family == sa_family_t(AF_INET6) {
            var sin6 = raw.load(as: sockaddr_in6.self)
            let bytes = withUnsafeBytes(of: &sin6.sin6_addr) { Array($0) }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            guard let address = IPAddress(bytes: mapped ? Array(bytes[12...]) : bytes) else { return nil }
            self.init(address: address, port: UInt16(bigEndian: sin6.sin6_port))
        } else {
            return nil
        }
    }
}

/// The tunnel's UDP socket: dual-stack where IPv6 exists, carrying a firewall mark so the
/// encrypted packets never route back into the tunnel they came from. Its descriptor
/// number never changes: moving to another port (`wg set IFACE listen-port N`) puts a new
/// socket under the same number, so the threads that send and receive on it carry on.
public final class UDPSocket: @unchecked Sendable {
    public let fd: Int32
    public let isDualStack: Bool
    private let boundPort: Atomic<UInt16>
    private struct State {
        var mark: UInt32?
        var isShut = false
    }
    /// Serializes changes (mark, port, shutdown) against each other; the data path never takes it.
    private let state: Mutex<State>

    public var port: UInt16 { boundPort.load(ordering: .relaxed) }

    public init(port: UInt16, mark: UInt32?) throws {
        let opened: (Int32, UInt16)
        if let dual = try Self.open(dualStack: true, port: port, mark: mark) {
            opened = dual
            isDualStack = true
        } else if let v4 = try Self.open(dualStack: false, port: port, mark: mark) {
            // No IPv6 on this host: serve IPv4 only.
            opened = v4
            isDualStack = false
        } else {
            throw SystemCallError("create UDP socket", code: EAFNOSUPPORT)
        }
        fd = opened.0
        boundPort = Atomic(opened.1)
        state = Mutex(State(mark: mark))
    }

    deinit { close(fd) }

    /// A socket of the family, marked and bound, and the port it got; nil when the family
    /// does not exist here.
    private static func open(dualStack: Bool, port: UInt16, mark: UInt32?) throws -> (Int32, UInt16)? {
        let fd = socket(dualStack ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            if errno == EAFNOSUPPORT { return nil }
            throw SystemCallError("create UDP socket")
        }
        do {
            var zero: Int32 = 0
            if dualStack { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size)) }
            // Large buffers absorb bursts between two batches.
            var size: Int32 = 4 << 20
            setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
            if let mark { try setMark(mark, on: fd) }
            return (fd, try bind(fd, dualStack: dualStack, port: port))
        } catch {
            close(fd)
            throw error
        }
    }

    public func setMark(_ mark: UInt32) throws {
        try state.withLock { state in
            try Self.setMark(mark, on: fd)
            state.mark = mark
        }
    }

    private static func setMark(_ mark: UInt32, on fd: Int32) throws {
        var value = mark
        guard setsockopt(fd, SOL_SOCKET, vx_so_mark(), &value, socklen_t(MemoryLayout<UInt32>.size)) == 0 else {
            throw SystemCallError("set SO_MARK 0x\(String(mark, radix: 16)) on the tunnel socket")
        }
    }

    /// Moves to `port` (0: any free one), with `mark` if given (else the current one). A
    /// port that cannot be taken (in use, privileged) changes nothing.
    public func rebind(port: UInt16, mark newMark: UInt32? = nil) throws {
        try state.withLock { state in
            guard !state.isShut else { throw SystemCallError("move the tunnel socket: it is shutting down", code: ESHUTDOWN) }
            let mark = newMark ?? state.mark
            guard let (fresh, bound) = try Self.open(dualStack: isDualStack, port: port, mark: mark) else {
                throw SystemCallError("create UDP socket", code: EAFNOSUPPORT)
            }
            // A second number for the old socket, so it can be woken once its number is
            // the new socket's: a receive blocked on it returns, and the next one waits on
            // the new socket.
            let old = dup(fd)
            guard dup2(fresh, fd) >= 0 else {
                let code = errno
                close(fresh)
                if old >= 0 { close(old) }
                throw SystemCallError("move the tunnel socket to port \(port)", code: code)
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            close(fresh)
            if old >= 0 {
                Glibc.shutdown(old, Int32(SHUT_RDWR))
                close(old)
            }
            state.mark = mark
            boundPort.store(bound, ordering: .relaxed)
        }
    }

    /// Wakes whatever is blocked receiving, for good: used when the tunnel stops.
    public func shutdown() {
        state.withLock { state in
            state.isShut = true
            Glibc.shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    private static func bind(_ fd: Int32, dualStack: Bool, port: UInt16) throws -> UInt16 {
        let rc: Int32
        if dualStack {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            rc = withUnsafePointer(to: &sin6) { Glibc.bind(fd, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            rc = withUnsafePointer(to: &sin) { Glibc.bind(fd, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw SystemCallError("bind UDP port \(port)") }
        var storage = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &storage) { getsockname(fd, UnsafeMutableRawPointer($0).assumingMemoryBound(to: sockaddr.self), &length) }
        return withUnsafePointer(to: &storage) { Endpoint(UnsafeRawPointer($0))?.port ?? port }
    }

    /// Sends one datagram (the cold path: handshakes, cookies, keepalives).
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, to destination: Endpoint) -> Bool {
        var storage = sockaddr_in6()
        let length: socklen_t
        if isDualStack {
            destination.storeV6(into: &storage)
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            guard destination.address.isIPv4 else { return false }
            withUnsafeMutableBytes(of: &storage) { destination.storeV4(into: $0.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let n = withUnsafePointer(to: &storage) {
            sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), length)
        }
        return n == bytes.count
    }
}

/// Preallocated message headers, iovecs and address storage for recvmmsg/sendmmsg, so the
/// per-packet path allocates nothing: slot i's data lives at `buffer(i)`.
public final class DatagramBatch: @unchecked Sendable {
    public let capacity: Int
    public let slotSize: Int
    /// Bytes before each slot's payload (room for the transport header when encrypting in place).
    public let headroom: Int
    let storage: UnsafeMutableRawBufferPointer
    let headers: UnsafeMutablePointer<vx_mmsghdr>
    let iovecs: UnsafeMutablePointer<iovec>
    let addresses: UnsafeMutablePointer<sockaddr_in6>
    /// Payload ranges (relative to the slot) to send, filled by the caller before `send`.
    public var count = 0

    public init(capacity: Int, slotSize: Int, headroom: Int) {
        self.capacity = capacity
        self.slotSize = slotSize
        self.headroom = headroom
        storage = .allocate(byteCount: capacity * slotSize, alignment: 64)
        headers = .allocate(capacity: capacity)
        iovecs = .allocate(capacity: capacity)
        addresses = .allocate(capacity: capacity)
        headers.initialize(repeating: vx_mmsghdr(), count: capacity)
        iovecs.initialize(repeating: iovec(), count: capacity)
        addresses.initialize(repeating: sockaddr_in6(), count: capacity)
    }

    deinit {
        storage.deallocate()
        headers.deallocate()
        iovecs.deallocate()
        addresses.deallocate()
    }

    /// The whole slot `i` (headroom included).
    @inline(__always)
    public func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[(i * slotSize)..<((i + 1) * slotSize)])
    }

    /// Receives up to `capacity` datagrams into the slots (each at offset `headroom`),
    /// blocking for the first. Returns how many arrived, or nil when the socket failed.
    public func receive(from socket: UDPSocket) -> Int? {
        for i in 0..<capacity {
            iovecs[i].iov_base = slot(i).baseAddress! + headroom
            iovecs[i].iov_len = slotSize - headroom
            headers[i].msg_hdr = msghdr()
            headers[i].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + i)
            headers[i].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in6>.size)
            headers[i].msg_hdr.msg_iov = iovecs + i
            headers[i].msg_hdr.msg_iovlen = 1
            headers[i].msg_len = 0
        }
        while true {
            let n = vx_recvmmsg(socket.fd, headers, UInt32(capacity), vx_msg_waitforone())
            if n >= 0 { return Int(n) }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Length of received datagram `i`.
    @inline(__always)
    public func receivedLength(_ i: Int) -> Int { Int(headers[i].msg_len) }

    /// Sender of received datagram `i`.
    @inline(__always)
    public func sender(_ i: Int) -> Endpoint? { Endpoint(UnsafeRawPointer(addresses + i)) }

    /// Queues slot `i`'s bytes `range` (relative to the slot) for `destination`.
    @inline(__always)
    public func enqueue(slot i: Int, range: Range<Int>, to destination: Endpoint, dualStack: Bool) {
        iovecs[count].iov_base = slot(i).baseAddress! + range.lowerBound
        iovecs[count].iov_len = range.count
        headers[count].msg_hdr = msghdr()
        if dualStack {
            destination.storeV6(into: addresses + count)
            headers[count].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            UnsafeMutableRawPointer(addresses + count).withMemoryRebound(to: sockaddr_in.self, capacity: 1) { destination.storeV4(into: $0) }
            headers[count].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        headers[count].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + count)
        headers[count].msg_hdr.msg_iov = iovecs + count
        headers[count].msg_hdr.msg_iovlen = 1
        count += 1
    }

    /// Sends everything enqueued with as few sendmmsg calls as the kernel allows.
    public func flush(to socket: UDPSocket) {
        var sent = 0
        while sent < count {
            let n = vx_sendmmsg(socket.fd, headers + sent, UInt32(count - sent), 0)
            if n > 0 { sent += Int(n); continue }
            if n < 0 && errno == EINTR { continue }
            // A datagram the kernel refuses (no route, EPERM from a firewall) is lost like
            // any UDP datagram; skip it rather than spin.
            sent += 1
        }
        count = 0
    }
}
