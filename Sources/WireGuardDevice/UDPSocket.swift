import Addresses
import CLinux
import Descriptors
import HexDigits
import Glibc
import Synchronization
import WireGuard

/// The tunnel's UDP socket: dual-stack where IPv6 exists, carrying a firewall mark so the
/// encrypted packets never route back into the tunnel they came from. Its descriptor
/// number never changes: moving to another port (`wg set IFACE listen-port N`) puts a new
/// socket under the same number, so the threads that send and receive on it carry on.
///
/// With offloads (the default) it sends runs of same-sized datagrams to one peer as one
/// UDP_SEGMENT (GSO) message and takes datagrams the kernel coalesced (UDP_GRO), as
/// wireguard-go and the kernel's WireGuard do: the kernel then builds, routes, filters and
/// forwards one buffer per run instead of one per datagram.
public final class UDPSocket: @unchecked Sendable {
    private let descriptor: FileDescriptor
    /// Lent for one call at a time; its number stays the same across `rebind`.
    public var fd: Int32 { descriptor.raw }
    public let isDualStack: Bool
    /// Whether received datagrams may be coalesced runs (UDP_GRO), to be cut at the segment
    /// size the kernel reports with each.
    public let receivesCoalesced: Bool
    /// Whether sends may be segmented by the kernel (UDP_SEGMENT); switched off for good if
    /// the route refuses it (EIO), as wireguard-go does.
    private let segmentation: Atomic<Bool>
    private let boundPort: Atomic<UInt16>
    private struct State {
        var mark: UInt32?
        var isShut = false
        var coalesce: Bool
    }
    /// Serializes changes (mark, port, shutdown) against each other; the data path never takes it.
    private let state: Mutex<State>

    public var port: UInt16 { boundPort.load(ordering: .relaxed) }

    public var segmentsSends: Bool { segmentation.load(ordering: .relaxed) }

    /// The kernel refused a segmented send: send datagram by datagram from now on.
    func stopSegmenting() { segmentation.store(false, ordering: .relaxed) }

    public init(port: UInt16, mark: UInt32?, offloads: Bool = true) throws {
        isDualStack = Self.hasIPv6()
        let descriptor = try Self.open(dualStack: isDualStack, port: port, mark: mark, coalesce: offloads)
        boundPort = Atomic(Self.boundPort(descriptor, requested: port))
        segmentation = Atomic(offloads && vx_udp_segment_supported(descriptor.raw) != 0)
        self.descriptor = descriptor
        state = Mutex(State(mark: mark, coalesce: offloads))
        receivesCoalesced = offloads
    }

    /// Whether this host has IPv6 sockets; without them the tunnel serves IPv4 only.
    private static func hasIPv6() -> Bool {
        do throws(SystemError) {
            try FileDescriptor.socket(AF_INET6, Int32(SOCK_DGRAM.rawValue)).close()
            return true
        } catch {
            // Another failure is the real socket's to report.
            return error.code != EAFNOSUPPORT
        }
    }

    /// A socket of the family, marked and bound.
    private static func open(dualStack: Bool, port: UInt16, mark: UInt32?, coalesce: Bool) throws(SystemError) -> FileDescriptor {
        let socket = try FileDescriptor.socket(dualStack ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue))
        var zero: Int32 = 0
        if dualStack { setsockopt(socket.raw, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size)) }
        // Large buffers absorb bursts between two batches.
        var size: Int32 = 4 << 20
        setsockopt(socket.raw, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(socket.raw, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        if let mark { try setMark(mark, on: socket) }
        // A kernel without UDP_GRO (before 5.0) hands us datagrams one by one, which
        // the receiver handles the same way.
        if coalesce { _ = vx_udp_enable_gro(socket.raw) }
        try bind(socket, dualStack: dualStack, port: port)
        return socket
    }

    public func setMark(_ mark: UInt32) throws {
        try state.withLock { state in
            try Self.setMark(mark, on: descriptor)
            state.mark = mark
        }
    }

    private static func setMark(_ mark: UInt32, on socket: borrowing FileDescriptor) throws(SystemError) {
        var value = mark
        guard setsockopt(socket.raw, SOL_SOCKET, vx_so_mark(), &value, socklen_t(MemoryLayout<UInt32>.size)) == 0 else {
            throw SystemError("set SO_MARK \(hex(mark)) on the tunnel socket")
        }
    }

    /// Moves to `port` (0: any free one), with `mark` if given (else the current one). A
    /// port that cannot be taken (in use, privileged) changes nothing.
    public func rebind(port: UInt16, mark newMark: UInt32? = nil) throws {
        try state.withLock { state in
            guard !state.isShut else { throw SystemError("move the tunnel socket: it is shutting down", code: ESHUTDOWN) }
            let mark = newMark ?? state.mark
            let fresh = try Self.open(dualStack: isDualStack, port: port, mark: mark, coalesce: state.coalesce)
            let bound = Self.boundPort(fresh, requested: port)
            // A second number for the old socket, so it can be woken once its number is
            // the new socket's: a receive blocked on it returns, and the next one waits on
            // the new socket.
            let old = try? FileDescriptor("dup the tunnel socket", returned: fcntl(fd, F_DUPFD_CLOEXEC, 0))
            guard dup2(fresh.raw, fd) >= 0 else { throw SystemError("move the tunnel socket to port \(port)") }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            if let old { Glibc.shutdown(old.raw, Int32(SHUT_RDWR)) }
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

    private static func bind(_ socket: borrowing FileDescriptor, dualStack: Bool, port: UInt16) throws(SystemError) {
        let fd = socket.raw
        let any = Endpoint(address: dualStack ? .v6(0, 0) : .v4(0), port: port)
        guard any.withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0 else { throw SystemError("bind UDP port \(port)") }
    }

    /// The port the kernel gave a bound socket (the requested one unless it was 0).
    private static func boundPort(_ socket: borrowing FileDescriptor, requested port: UInt16) -> UInt16 {
        Endpoint.local(of: socket.raw)?.port ?? port
    }

    /// Sends one datagram (the cold path: handshakes, cookies, keepalives).
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, to destination: Endpoint) -> Bool {
        guard isDualStack || destination.address.isIPv4 else { return false }
        let n = destination.withSockaddr(mappingIPv4: isDualStack) {
            sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, $1)
        }
        return n == bytes.count
    }
}
