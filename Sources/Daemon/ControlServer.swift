import Addresses
import CLinux
import Control
import Descriptors
import Glibc
import Monotonic
import Applying
import DaemonLoop

/// The listening socket at /run/vpnexec/vpnd.sock and its connections. Anyone may
/// connect (mode 0666): what a caller may do is decided per request from the kernel's
/// account of who the caller is. Every user is served fairly whatever another does: each
/// uid may hold a few connections at once, all users together a bounded number, root has
/// room of its own beyond that; a connection that sends nothing is closed after a second,
/// any connection after a few. Nothing blocks the loop: reads and writes are non-blocking
/// and answers are queued until the socket takes them.
final class ControlServer {
    struct Limits {
        /// Connections one non-root uid may hold at once (vpnexec holds one for a few ms).
        var perUser = 8
        /// Connections all non-root users together may hold.
        var allUsers = 64
        /// Root's own, on top: a flood by users never locks root's vpnctl out.
        var root = 16
        var requestBytes = 65536
        /// A connection that has sent nothing by then is closed.
        var silent: Swift.Duration = .seconds(1)
        /// Any connection is closed by then, answered or not.
        var total: Swift.Duration = .seconds(5)
    }

    /// What the daemon learns about a request's connection.
    struct Caller {
        let fd: DescriptorNumber
        let uid: UInt32
        /// A descriptor the client passed with its request (vpnexec's pidfd), if any; the
        /// server closes it with the connection.
        let passed: DescriptorNumber?
    }

    typealias RequestHandler = (ControlRequest, Caller, _ reply: @escaping (ControlResponse) -> Void) -> Void

    private final class Connection {
        let fd: DescriptorNumber
        let uid: UInt32
        let opened: MonotonicInstant
        var received: [UInt8] = []
        var passed: DescriptorNumber?
        var outbox: [UInt8] = []
        /// How much of `outbox` the socket has taken.
        var sent = 0
        var answered = false

        init(fd: DescriptorNumber, uid: UInt32, opened: MonotonicInstant) {
            self.fd = fd
            self.uid = uid
            self.opened = opened
        }
    }

    let path: String
    let listener: DescriptorNumber
    let limits: Limits
    /// The listener, the connections and what their clients passed.
    private var owned = DescriptorTable()
    private let loop: EventLoop
    private let onRequest: RequestHandler
    private var connections: [DescriptorNumber: Connection] = [:]
    /// Connections closed because their uid or everybody was at the limit.
    private(set) var refusedConnections = 0

    init(path: String, loop: EventLoop, limits: Limits = Limits(), onRequest: @escaping RequestHandler) throws {
        self.path = path
        self.loop = loop
        self.limits = limits
        self.onRequest = onRequest
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty {
            mkdir(directory, 0o755)
        }
        let address = try UnixSocketAddress(path: path)
        if Self.somebodyListens(address) {
            throw ApplyError.controlSocketHeld(path: path)
        }
        unlink(path)
        listener = owned.insert(try Self.listen(at: address, path: path))
        loop.watch(listener) { [unowned self] _ in acceptAll() }
        loop.every(.milliseconds(200)) { [unowned self] in expire() }
    }

    private static func listen(at address: UnixSocketAddress, path: String) throws(SystemError) -> FileDescriptor {
        let listener = try stream()
        guard address.withSockaddr({ bind(listener.raw, $0, $1) }) == 0 else { throw SystemError("bind \(path)") }
        chmod(path, 0o666)
        guard Glibc.listen(listener.raw, 128) == 0 else { throw SystemError("listen \(path)") }
        return listener
    }

    private static func stream() throws(SystemError) -> FileDescriptor {
        try FileDescriptor.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
    }

    func close() {
        for fd in Array(connections.keys) { drop(fd) }
        loop.unwatch(listener)
        owned.close(listener)
        unlink(path)
    }

    static func somebodyListens(_ address: UnixSocketAddress) -> Bool {
        guard let fd = try? FileDescriptor.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue)) else { return false }
        return address.withSockaddr { connect(fd.raw, $0, $1) == 0 }
    }

    // MARK: admission

    /// Accepts what is waiting, a bounded number per wakeup: one user connecting in a
    /// tight loop must not keep the loop from everything else.
    private func acceptAll() {
        for _ in 0..<32 {
            let accepted = vx_accept4(listener.raw, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
            guard accepted >= 0 else { return }
            let connection = FileDescriptor(adopting: accepted)
            var credentials = vx_ucred()
            guard vx_peer_credentials(accepted, &credentials) == 0 else {
                connection.close()
                continue
            }
            if let refusal = admission(uid: credentials.uid) {
                // Best effort, never waiting: the client learns why instead of a bare close.
                refusedConnections += 1
                let bytes = ControlCoding.encode(ControlResponse.failure(refusal))
                _ = bytes.withUnsafeBytes { Glibc.send(accepted, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                connection.close()
                continue
            }
            let fd = owned.insert(connection)
            connections[fd] = Connection(fd: fd, uid: credentials.uid, opened: .now())
            loop.watch(fd) { [unowned self] events in service(fd, events) }
        }
    }

    /// Why a new connection of `uid` is not taken now, or nil.
    func admission(uid: UInt32) -> String? {
        Self.admission(uid: uid, open: connections.values.map(\.uid), limits: limits)
    }

    static func admission(uid: UInt32, open: [UInt32], limits: Limits) -> String? {
        if uid == 0 {
            let rootOpen = open.filter { $0 == 0 }.count
            return rootOpen < limits.root ? nil : "vpnd is busy: root already has \(rootOpen) requests open"
        }
        let mine = open.filter { $0 == uid }.count
        if mine >= limits.perUser {
            return "too many requests open at once from uid \(uid) (\(mine), at most \(limits.perUser)); try again when they are answered"
        }
        let users = open.filter { $0 != 0 }.count
        if users >= limits.allUsers {
            return "vpnd is busy: \(users) requests from users are open; try again in a moment"
        }
        return nil
    }

    // MARK: reading and writing

    private func service(_ fd: DescriptorNumber, _ events: Int16) {
        guard let connection = connections[fd] else { return }
        if connection.answered, connection.outbox.isEmpty, events & Int16(POLLHUP | POLLERR) != 0 {
            drop(fd)  // gone while its answer is being worked out
            return
        }
        if events & Int16(POLLOUT) != 0 { flush(connection) }
        if connections[fd] != nil, !connection.answered, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 { receive(connection) }
    }

    private func receive(_ connection: Connection) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        var fds = [Int32](repeating: -1, count: 4)
        while !connection.answered {
            var count: Int32 = 0
            let n = retryingInterrupted { vx_recv_with_fds(connection.fd.raw, &chunk, chunk.count, &fds, Int32(fds.count), &count) }
            for passed in fds.prefix(Int(count)) {
                // One descriptor per request is all the protocol uses; keep the first.
                let descriptor = FileDescriptor(adopting: passed)
                if connection.passed == nil { connection.passed = owned.insert(descriptor) } else { descriptor.close() }
            }
            if n > 0 {
                connection.received += chunk[0..<n]
                if let newline = connection.received.firstIndex(of: UInt8(ascii: "\n")) {
                    dispatch(connection, line: Array(connection.received[..<newline]))
                    return
                }
                if connection.received.count > limits.requestBytes {
                    answer(connection, .failure("request too large"))
                    return
                }
                continue
            }
            if n == 0 || errno != EAGAIN { drop(connection.fd) }
            return
        }
    }

    private func dispatch(_ connection: Connection, line: [UInt8]) {
        connection.answered = true
        loop.setEvents(connection.fd, 0)
        let request: ControlRequest
        do {
            request = try ControlCoding.decode(ControlRequest.self, from: line)
        } catch {
            send(connection, .failure("malformed request"))
            return
        }
        let caller = Caller(fd: connection.fd, uid: connection.uid, passed: connection.passed)
        onRequest(request, caller) { [weak self, weak connection] response in
            guard let self, let connection, self.connections[connection.fd] === connection else { return }
            self.send(connection, response)
        }
    }

    private func answer(_ connection: Connection, _ response: ControlResponse) {
        connection.answered = true
        send(connection, response)
    }

    private func send(_ connection: Connection, _ response: ControlResponse) {
        connection.outbox = ControlCoding.encode(response)
        connection.sent = 0
        flush(connection)
    }

    private func flush(_ connection: Connection) {
        while connection.sent < connection.outbox.count {
            let count = connection.outbox.withUnsafeBytes { bytes in
                retryingInterrupted {
                    Glibc.send(connection.fd.raw, bytes.baseAddress! + connection.sent, bytes.count - connection.sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
            }
            if count > 0 {
                connection.sent += count
                continue
            }
            if count < 0 && errno == EAGAIN {
                loop.setEvents(connection.fd, Int16(POLLOUT))
                return
            }
            break
        }
        drop(connection.fd)
    }

    private func drop(_ fd: DescriptorNumber) {
        guard let connection = connections.removeValue(forKey: fd) else { return }
        loop.unwatch(fd)
        if let passed = connection.passed { owned.close(passed) }
        owned.close(fd)
        if connection.outbox.count > Self.largeReply {
            connection.outbox = []
            FreedMemory.giveBack()
        }
    }

    static let largeReply = 1 << 20

    /// Silent connections go after a second, any connection after the total limit.
    private func expire() {
        let now = MonotonicInstant.now()
        for connection in Array(connections.values) {
            let age = now.since(connection.opened)
            if age > limits.total || (connection.received.isEmpty && !connection.answered && age > limits.silent) {
                drop(connection.fd)
            }
        }
    }
}
