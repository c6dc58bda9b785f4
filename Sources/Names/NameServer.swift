import Addresses
import CLinux
import Descriptors
import Glibc
import JSON

/// What the server needs of vpnd's event loop (the Daemon's `EventLoop` provides it).
public protocol NameServerLoop: AnyObject {
    func watch(_ fd: DescriptorNumber, events: Int16, _ handler: @escaping (Int16) -> Void)
    func setEvents(_ fd: DescriptorNumber, _ events: Int16)
    func unwatch(_ fd: DescriptorNumber)
    @discardableResult func after(_ delay: Swift.Duration, _ body: @escaping () -> Void) -> Int
}

/// One profile's varlink server at the edge: the Unix socket a member's connect to
/// resolved's `io.systemd.Resolve` is sent to (the cgroup's unix-connect program), its
/// connections, their calls read (`ResolveCall`) and answered (`ResolveLookup`) through
/// `ask`: the profile's DNS proxy, which replies with the answer, after the addresses of a
/// listed name are in their sets.
///
/// Only members of the profile are answered (`admit`).
/// Bounded for what a member may write: at most `maxConnections` at once, one call a
/// connection at a time (further calls wait in order, at most `maxQueued`), a message at
/// most `VarlinkReader.maxMessage`, a connection at most `idleSeconds` without a call;
/// what breaks these or the protocol is counted and closed.
public final class NameServer {
    /// Sends one DNS query through the profile's proxy (over TCP upstream when asked: a
    /// truncated answer's retry); `answer` is called once, with the reply's bytes or nil.
    public typealias Ask = (_ query: [UInt8], _ overTCP: Bool, _ answer: @escaping ([UInt8]?) -> Void) -> Void

    public struct Counters: Hashable, Sendable {
        public var calls: UInt64 = 0
        public var answered: UInt64 = 0
        public var errors: UInt64 = 0
        /// Not varlink, too long, too many calls or connections: closed.
        public var refused: UInt64 = 0
    }

    public static let maxConnections = 64
    public static let maxQueued = 8
    public static let idleSeconds = 30

    public let path: String
    public private(set) var counters = Counters()
    /// Whether the process that connected (its pid, by SO_PEERCRED) may ask: a member of
    /// the profile. Another is closed at once and counted as refused, as the port-53 proxy
    /// drops a query without the profile's mark: it must not fill the profile's sets.
    public var admit: (_ pid: Int32) -> Bool = { _ in true }
    private let loop: NameServerLoop
    private let ask: Ask
    private var owned = DescriptorTable()
    private let listener: DescriptorNumber
    private var connections: [DescriptorNumber: Connection] = [:]
    /// Tells a connection's calls from a later one's that got the same descriptor number.
    private var generation = 0

    private struct Connection {
        var generation: Int
        var reader = VarlinkReader()
        var pending: [[UInt8]] = []
        var busy = false
        var outbox: [UInt8] = []
        var closing = false
        var calls: UInt64 = 0
    }

    /// Listens at `path` (made anew: a socket left by an earlier vpnd is removed), mode
    /// 0666 as resolved's is: any member, whatever its user, connects. Throws
    /// UnixSocketAddress.Invalid or the SystemError of the call that failed.
    public init(path: String, loop: NameServerLoop, ask: @escaping Ask) throws {
        self.path = path
        self.loop = loop
        self.ask = ask
        let address = try UnixSocketAddress(path: path)
        let socket = try FileDescriptor.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        Self.makeDirectories(directory)
        unlink(path)
        guard address.withSockaddr({ bind(socket.raw, $0, $1) }) == 0 else { throw SystemError("bind \(path)") }
        chmod(path, 0o666)
        guard listen(socket.raw, 128) == 0 else { throw SystemError("listen \(path)") }
        listener = owned.insert(socket)
        loop.watch(listener, events: Int16(POLLIN)) { [weak self] _ in self?.accept() }
    }

    /// Each directory of `path` that is missing, mode 0755 (members must reach the socket).
    static func makeDirectories(_ path: String) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            mkdir(prefix, 0o755)
        }
    }

    public func close() {
        for fd in connections.keys {
            loop.unwatch(fd)
            owned.close(fd)
        }
        connections = [:]
        loop.unwatch(listener)
        owned.close(listener)
        unlink(path)
    }

    private func accept() {
        while true {
            let raw = vx_accept4(listener.raw, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
            guard raw >= 0 else { return }
            let connection = FileDescriptor(adopting: raw)
            var peer = vx_ucred()
            guard connections.count < Self.maxConnections, vx_peer_credentials(raw, &peer) == 0, admit(peer.pid) else {
                counters.refused += 1
                continue
            }
            let fd = owned.insert(connection)
            generation += 1
            connections[fd] = Connection(generation: generation)
            loop.watch(fd, events: Int16(POLLIN)) { [weak self] events in self?.service(fd, events) }
            armIdle(fd, generation: generation, calls: 0)
        }
    }

    /// Closes a connection that made no call for `idleSeconds` (and none is under way).
    private func armIdle(_ fd: DescriptorNumber, generation: Int, calls: UInt64) {
        loop.after(.seconds(Self.idleSeconds)) { [weak self] in
            guard let self, let connection = connections[fd], connection.generation == generation else { return }
            if connection.busy || connection.calls != calls {
                armIdle(fd, generation: generation, calls: connection.calls)
            } else {
                drop(fd)
            }
        }
    }

    private func service(_ fd: DescriptorNumber, _ events: Int16) {
        guard connections[fd] != nil else { return }
        if events & Int16(POLLOUT) != 0 { flush(fd) }
        guard connections[fd] != nil, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 16384)
        let count = retryingInterrupted { read(fd.raw, &buffer, buffer.count) }
        guard count > 0 else {
            if count == 0 || errno != EAGAIN { drop(fd) }
            return
        }
        connections[fd]?.reader.append(buffer[0..<count])
        while let message = connections[fd]?.reader.next() {
            guard (connections[fd]?.pending.count ?? 0) < Self.maxQueued else { return refuse(fd) }
            connections[fd]?.pending.append(message)
        }
        if connections[fd]?.reader.overflowed == true { return refuse(fd) }
        next(fd)
    }

    private func refuse(_ fd: DescriptorNumber) {
        counters.refused += 1
        drop(fd)
    }

    /// The connection's next call, if it has one waiting and none under way.
    private func next(_ fd: DescriptorNumber) {
        guard var connection = connections[fd], !connection.busy, !connection.pending.isEmpty else { return }
        let message = connection.pending.removeFirst()
        counters.calls += 1
        connection.calls += 1
        switch ResolveCall.read(message) {
        case let .failure(error):
            connections[fd] = connection
            guard let reply = error.reply else { return refuse(fd) }
            counters.errors += 1
            send(reply, to: fd)
            next(fd)
        case let .success(call):
            connection.busy = true
            connections[fd] = connection
            let lookup = ResolveLookup(call)
            guard lookup.reply == nil else { return finish(fd, generation: connection.generation, lookup) }
            let shared = LookupBox(lookup)
            let generation = connection.generation
            func send(_ index: Int, overTCP: Bool) {
                ask(lookup.queries[index], overTCP) { [weak self] answer in
                    if shared.lookup.receive(answer, for: index) { return send(index, overTCP: true) }
                    guard let self, shared.lookup.reply != nil, !shared.done else { return }
                    shared.done = true
                    finish(fd, generation: generation, shared.lookup)
                }
            }
            for index in lookup.queries.indices { send(index, overTCP: false) }
        }
    }

    private final class LookupBox {
        var lookup: ResolveLookup
        var done = false
        init(_ lookup: ResolveLookup) { self.lookup = lookup }
    }

    private func finish(_ fd: DescriptorNumber, generation: Int, _ lookup: ResolveLookup) {
        guard connections[fd]?.generation == generation else { return }
        connections[fd]?.busy = false
        switch lookup.reply {
        case let .success(reply)?:
            counters.answered += 1
            send(reply, to: fd)
        case let .failure(error)?:
            counters.errors += 1
            if let reply = error.reply { send(reply, to: fd) }
        case nil: return
        }
        next(fd)
    }

    private func send(_ reply: JSONValue, to fd: DescriptorNumber) {
        connections[fd]?.outbox += VarlinkWriter.frame(reply)
        flush(fd)
    }

    private func flush(_ fd: DescriptorNumber) {
        guard var connection = connections[fd] else { return }
        while !connection.outbox.isEmpty {
            let count = connection.outbox.withUnsafeBytes { bytes in retryingInterrupted { Glibc.send(fd.raw, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) } }
            if count > 0 {
                connection.outbox.removeFirst(count)
            } else if count < 0 && errno == EAGAIN {
                break
            } else {
                drop(fd)
                return
            }
        }
        connections[fd] = connection
        loop.setEvents(fd, Int16(POLLIN) | (connection.outbox.isEmpty ? 0 : Int16(POLLOUT)))
    }

    private func drop(_ fd: DescriptorNumber) {
        guard connections.removeValue(forKey: fd) != nil else { return }
        loop.unwatch(fd)
        owned.close(fd)
    }
}
