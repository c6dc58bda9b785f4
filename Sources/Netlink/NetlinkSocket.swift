import CNetlink
import Glibc

/// One received netlink message, copied out of the receive buffer.
struct NetlinkReply {
    var raw: [UInt8]

    var type: UInt16 { raw.withUnsafeBytes { $0.loadUnaligned(as: nlmsghdr.self).nlmsg_type } }

    /// Runs `body` with the message as libmnl/libnftnl expect it.
    func withHeader<R>(_ body: (UnsafePointer<nlmsghdr>) throws -> R) rethrows -> R {
        try raw.withUnsafeBytes { try body($0.baseAddress!.assumingMemoryBound(to: nlmsghdr.self)) }
    }

    func familyHeader<T>(as type: T.Type) -> T {
        withHeader { $0.familyHeader(as: T.self) }
    }

    func attributes(familyHeaderSize: Int) -> NetlinkAttributes {
        withHeader { NetlinkAttributes(message: $0, familyHeaderSize: familyHeaderSize) }
    }
}

/// A netlink socket (libmnl) with the three exchanges we use: a request acknowledged by
/// the kernel, a dump, and a batch whose every message is acknowledged.
final class NetlinkSocket {
    private let handle: OpaquePointer
    let portID: UInt32
    private var lastSequence: UInt32
    private let receiveBuffer: UnsafeMutableRawBufferPointer

    init(bus: Int32, groups: UInt32 = 0) throws {
        guard let handle = mnl_socket_open2(bus, Int32(SOCK_CLOEXEC.rawValue)) else {
            throw NetlinkError.lastError("open netlink socket (bus \(bus))")
        }
        guard mnl_socket_bind(handle, groups, 0) == 0 else {
            let error = NetlinkError.lastError("bind netlink socket (bus \(bus))")
            mnl_socket_close(handle)
            throw error
        }
        self.handle = handle
        portID = mnl_socket_get_portid(handle)
        lastSequence = UInt32(truncatingIfNeeded: time(nil))
        receiveBuffer = .allocate(byteCount: 1 << 18, alignment: 8)
        // Errors carry only the offending header plus the kernel's explanation (extack).
        var on: Int32 = 1
        _ = mnl_socket_setsockopt(handle, NETLINK_CAP_ACK, &on, socklen_t(MemoryLayout<Int32>.size))
        _ = mnl_socket_setsockopt(handle, NETLINK_EXT_ACK, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        mnl_socket_close(handle)
        receiveBuffer.deallocate()
    }

    var fileDescriptor: Int32 { mnl_socket_get_fd(handle) }

    func nextSequence() -> UInt32 {
        lastSequence &+= 1
        return lastSequence
    }

    /// Large batches need room on both sides: the kernel refuses a send larger than the
    /// send buffer and drops acks that overflow the receive buffer.
    func reserveBuffers(bytes: Int) {
        var size = Int32(clamping: bytes)
        let fd = fileDescriptor
        if setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// A kernel that never answers must not hang the daemon.
    func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        _ = setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ bytes: [UInt8], operation: String) throws {
        let sent = bytes.withUnsafeBytes { mnl_socket_sendto(handle, $0.baseAddress, $0.count) }
        guard sent == bytes.count else { throw NetlinkError.lastError(operation) }
    }

    /// Sends one request with NLM_F_ACK and waits for the kernel's answer.
    func perform(_ message: NetlinkMessage, operation: String) throws {
        message.sequence = nextSequence()
        message.header.pointee.nlmsg_flags |= UInt16(NLM_F_REQUEST | NLM_F_ACK)
        try send(message.bytes, operation: operation)
        try awaitAcknowledgements([message.sequence: operation])
    }

    /// Sends one request with NLM_F_ACK and returns the messages the kernel answered with
    /// before its acknowledgement (e.g. RTM_GETLINK for one name).
    func request(_ message: NetlinkMessage, operation: String) throws -> [NetlinkReply] {
        message.sequence = nextSequence()
        message.header.pointee.nlmsg_flags |= UInt16(NLM_F_REQUEST | NLM_F_ACK)
        try send(message.bytes, operation: operation)
        var answers: [NetlinkReply] = []
        while true {
            for reply in try receive(operation: operation) {
                guard reply.withHeader({ $0.pointee.nlmsg_seq }) == message.sequence else { continue }
                guard reply.type == UInt16(NLMSG_ERROR) else {
                    answers.append(reply)
                    continue
                }
                let (_, code, text) = Self.decodeError(reply)
                if code != 0 { throw NetlinkError(operation, code: code, kernelMessage: text) }
                return answers
            }
        }
    }

    /// Waits until every sequence number in `pending` is acknowledged or refused; throws
    /// the first refusal (in sequence order, which is the order of the batch).
    func awaitAcknowledgements(_ pending: [UInt32: String]) throws {
        var pending = pending
        var errors: [(UInt32, NetlinkError)] = []
        while !pending.isEmpty {
            for reply in try receive(operation: "receive netlink acknowledgements") {
                guard reply.type == UInt16(NLMSG_ERROR) else { continue }
                let (sequence, code, message) = Self.decodeError(reply)
                guard let operation = pending.removeValue(forKey: sequence) else { continue }
                if code != 0 { errors.append((sequence, NetlinkError(operation, code: code, kernelMessage: message))) }
            }
        }
        if let first = errors.min(by: { $0.0 < $1.0 }) { throw first.1 }
    }

    /// Sends a dump request and returns every message of the answer. A dump that the
    /// kernel marks inconsistent (the table changed under it) is retried.
    func dump(_ message: NetlinkMessage, operation: String) throws -> [NetlinkReply] {
        message.header.pointee.nlmsg_flags |= UInt16(NLM_F_REQUEST | NLM_F_DUMP)
        for _ in 0..<5 {
            message.sequence = nextSequence()
            try send(message.bytes, operation: operation)
            var replies: [NetlinkReply] = []
            var interrupted = false
            dumping: while true {
                for reply in try receive(operation: operation) {
                    let header = reply.withHeader { $0.pointee }
                    guard header.nlmsg_seq == message.sequence else { continue }
                    if header.nlmsg_flags & UInt16(NLM_F_DUMP_INTR) != 0 { interrupted = true }
                    switch Int32(header.nlmsg_type) {
                    case NLMSG_DONE:
                        break dumping
                    case NLMSG_ERROR:
                        let (_, code, text) = Self.decodeError(reply)
                        if code != 0 { throw NetlinkError(operation, code: code, kernelMessage: text) }
                        break dumping
                    default:
                        replies.append(reply)
                    }
                }
            }
            if !interrupted { return replies }
        }
        throw NetlinkError(operation, code: EBUSY, kernelMessage: "dump kept changing")
    }

    /// Reads one datagram (blocking unless the socket is non-blocking) and splits it.
    func receive(operation: String) throws -> [NetlinkReply] {
        let count = mnl_socket_recvfrom(handle, receiveBuffer.baseAddress, receiveBuffer.count)
        guard count >= 0 else { throw NetlinkError.lastError(operation) }
        var replies: [NetlinkReply] = []
        var header = UnsafePointer(receiveBuffer.baseAddress!.assumingMemoryBound(to: nlmsghdr.self))
        var remaining = Int32(count)
        while mnl_nlmsg_ok(header, remaining) {
            let length = Int(header.pointee.nlmsg_len)
            replies.append(NetlinkReply(raw: Array(UnsafeRawBufferPointer(start: header, count: length))))
            let next = mnl_nlmsg_next(header, &remaining)!
            header = UnsafePointer(next)
        }
        return replies
    }

    /// (sequence of the refused request, positive errno or 0, extack message).
    static func decodeError(_ reply: NetlinkReply) -> (UInt32, Int32, String?) {
        reply.withHeader { header in
            let error = mnl_nlmsg_get_payload(header)!.loadUnaligned(as: nlmsgerr.self)
            var text: String?
            if header.pointee.nlmsg_flags & UInt16(NLM_F_ACK_TLVS) != 0 {
                // With NETLINK_CAP_ACK the TLVs follow nlmsgerr and the bare original header.
                let offset = MemoryLayout<nlmsgerr>.size
                if Int(header.pointee.nlmsg_len) > Int(vx_nlmsg_hdrlen()) + offset {
                    text = NetlinkAttributes(message: header, familyHeaderSize: offset).string(UInt16(NLMSGERR_ATTR_MSG.rawValue))
                }
            }
            return (error.msg.nlmsg_seq, -error.error, text)
        }
    }
}
