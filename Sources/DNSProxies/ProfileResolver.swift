import Addresses
import CLinux
import DNS
import DaemonLoop
import Descriptors
import Glibc
import Monotonic

/// One profile's resolver at the edge: its upstream sockets, members' TCP connections and
/// its own to the servers, the timer of its proxy's next deadline. What to send, fill and
/// answer is its `ResolverCore`'s; each entry here takes the time its loop handler read.
final class ProfileResolver {
    let settings: ResolverSettings
    let core: ResolverCore
    private let loop: EventLoop
    private let io: DatagramIO
    /// Every socket below: the upstream sockets, the TCP connections.
    private var owned = DescriptorTable()
    private var sockets: [DescriptorNumber] = []
    private var tcpClients: [DescriptorNumber: ClientConnection] = [:]
    private var tcpUpstreams: [DescriptorNumber: UpstreamConnection] = [:]
    private var upstream: [Bool: DescriptorNumber] = [:]
    private var timer: Int?
    private var localWaiters: [Int: ([UInt8]?) -> Void] = [:]
    private var nextLocal = 0
    static let maxTCPClients = 64
    /// How long a member's TCP connection, a local lookup or a connection upstream may
    /// last: past the proxy's own retries and failure.
    static let connectionLifetime = Duration.seconds(10)

    init(_ settings: ResolverSettings, loop: EventLoop, io: DatagramIO, filler: SetFiller) throws {
        self.settings = settings
        self.loop = loop
        self.io = io
        core = try ResolverCore(profile: settings.profile, configuration: settings.configuration, random: KernelRandom(), filler: filler)
        do {
            for ipv4 in [true, false] {
                let fd = owned.insert(try Self.socket(ipv4 ? AF_INET : AF_INET6, SOCK_DGRAM, mark: settings.mark))
                sockets.append(fd)
                upstream[ipv4] = fd
                loop.watch(fd) { [unowned self] _ in receiveAnswers(fd, now: .now()) }
            }
        } catch {
            close()
            throw error
        }
    }

    func close() {
        if let timer { loop.cancel(timer) }
        for fd in sockets + Array(tcpClients.keys) + Array(tcpUpstreams.keys) {
            loop.unwatch(fd)
            owned.close(fd)
        }
        sockets = []
        tcpClients = [:]
        tcpUpstreams = [:]
    }

    /// A non-blocking upstream socket carrying `mark` (SO_MARK: routed as the profile's, into
    /// its tunnel).
    static func socket(_ family: Int32, _ type: __socket_type, mark: UInt32) throws(SystemError) -> FileDescriptor {
        let socket = try FileDescriptor.socket(family, Int32(type.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        let fd = socket.raw
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if type == SOCK_DGRAM {
            // Bursts of queries and answers must not overflow into losses (and timeouts).
            var size: Int32 = 4 << 20
            setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if family == AF_INET6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size)) }
        var mark = mark
        guard setsockopt(fd, SOL_SOCKET, vx_so_mark(), &mark, socklen_t(MemoryLayout<UInt32>.size)) == 0 else { throw SystemError("SO_MARK") }
        return socket
    }

    // MARK: clients

    /// A query the steering socket read for this profile (DNSService passes it by its
    /// source address); answered on that socket, from the address it asked.
    func steeredQuery(_ query: [UInt8], from: Endpoint, control: ReceivedControl, socket: DescriptorNumber, now: MonotonicInstant) {
        guard settings.steered.accepts(control.mark), let asked = control.asked else {
            core.dropForeignQuery()
            return
        }
        core.query(query, from: .udp(socket: socket, from: from, asked: asked), over: .udp, now: now)
    }

    /// The actions of the queries of a burst, all at once (one batch of fills, one send of
    /// the replies).
    func performPending(now: MonotonicInstant) { perform(now: now) }

    /// A lookup from the profile's varlink server, as a member's port-53 query: the same
    /// servers, lists and sets, its addresses added before `answer` has the reply. Without
    /// a reply in time (the proxy drops some), `answer` has nil.
    func localQuery(_ query: [UInt8], overTCP: Bool, now: MonotonicInstant, _ answer: @escaping ([UInt8]?) -> Void) {
        nextLocal += 1
        let id = nextLocal
        localWaiters[id] = answer
        loop.after(Self.connectionLifetime) { [weak self] in self?.localWaiters.removeValue(forKey: id)?(nil) }
        core.query(query, from: .local(id), over: overTCP ? .tcp : .udp, now: now)
        perform(now: now)
    }

    /// A TCP connection the steering listener took for this profile (DNSService passes it
    /// by its source address), with the mark of the socket that made it, or made by a routed
    /// container of the profile: one of another mark (a socket bound to the address by hand,
    /// another profile's member) is closed and counted, as a datagram with another mark is.
    func steeredConnection(_ connection: consuming FileDescriptor, mark: UInt32?, fromContainer: Bool = false) {
        guard fromContainer || settings.steered.accepts(mark) else {
            core.dropForeignQuery()
            return
        }
        guard tcpClients.count < Self.maxTCPClients else { return }
        let fd = owned.insert(connection)
        tcpClients[fd] = ClientConnection()
        loop.watch(fd) { [unowned self] events in serviceClient(fd, events, now: .now()) }
        loop.after(Self.connectionLifetime) { [weak self] in self?.dropClient(fd) }
    }

    private func serviceClient(_ fd: DescriptorNumber, _ events: Int16, now: MonotonicInstant) {
        guard tcpClients[fd] != nil else { return }
        if events & Int16(POLLOUT) != 0 { flushClient(fd) }
        guard events & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 16384)
        let count = retryingInterrupted { read(fd.raw, &buffer, buffer.count) }
        guard count > 0 else {
            if count == 0 || errno != EAGAIN { dropClient(fd) }
            return
        }
        tcpClients[fd]?.reader.append(buffer[0..<count])
        while let message = tcpClients[fd]?.reader.next() {
            core.query(message, from: .tcp(connection: fd), over: .tcp, now: now)
        }
        perform(now: now)
    }

    private func dropClient(_ fd: DescriptorNumber) {
        guard tcpClients.removeValue(forKey: fd) != nil else { return }
        loop.unwatch(fd)
        owned.close(fd)
    }

    private func flushClient(_ fd: DescriptorNumber) {
        guard var peer = tcpClients[fd] else { return }
        while !peer.outbox.isEmpty {
            let count = peer.outbox.withUnsafeBytes { bytes in retryingInterrupted { send(fd.raw, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) } }
            if count > 0 {
                peer.outbox.removeFirst(count)
            } else if count < 0 && errno == EAGAIN {
                break
            } else {
                dropClient(fd)
                return
            }
        }
        tcpClients[fd] = peer
        loop.setEvents(fd, Int16(POLLIN) | (peer.outbox.isEmpty ? 0 : Int16(POLLOUT)))
    }

    // MARK: upstream

    /// The answers waiting on an upstream socket (a burst, one system call), then the
    /// proxy's actions for all of them at once.
    private func receiveAnswers(_ fd: DescriptorNumber, now: MonotonicInstant) {
        io.receive(fd) { answer, from in
            core.upstreamAnswer(answer, from: DNSServer(address: from.address, port: from.port), now: now)
        }
        perform(now: now)
    }

    /// A connection to `server` under way (non-blocking), owned here.
    private func connect(to server: DNSServer) throws(SystemError) -> DescriptorNumber {
        let socket = try Self.socket(server.address.isIPv4 ? AF_INET : AF_INET6, SOCK_STREAM, mark: settings.mark)
        let target = Endpoint(address: server.address, port: server.port)
        let started = target.withSockaddr { Glibc.connect(socket.raw, $0, $1) }
        guard started == 0 || errno == EINPROGRESS else { throw SystemError("connect") }
        return owned.insert(socket)
    }

    private func serviceUpstream(_ fd: DescriptorNumber, _ events: Int16, now: MonotonicInstant) {
        guard var connection = tcpUpstreams[fd] else { return }
        if !connection.connected {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd.raw, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0,
                  connection.query.withUnsafeBytes({ send(fd.raw, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == connection.query.count else {
                dropUpstream(fd)
                return
            }
            connection.connected = true
            tcpUpstreams[fd] = connection
            loop.setEvents(fd, Int16(POLLIN))
            return
        }
        var buffer = [UInt8](repeating: 0, count: 16384)
        let count = retryingInterrupted { read(fd.raw, &buffer, buffer.count) }
        guard count > 0 else {
            if count == 0 || errno != EAGAIN { dropUpstream(fd) }
            return
        }
        connection.reader.append(buffer[0..<count])
        tcpUpstreams[fd] = connection
        if let answer = tcpUpstreams[fd]?.reader.next() {
            core.upstreamAnswer(answer, from: connection.server, now: now)
            dropUpstream(fd)
            perform(now: now)
        }
    }

    private func dropUpstream(_ fd: DescriptorNumber) {
        guard tcpUpstreams.removeValue(forKey: fd) != nil else { return }
        loop.unwatch(fd)
        owned.close(fd)
    }

    // MARK: actions

    /// The core's actions carried out, then its next deadline armed on the loop: when it
    /// passes, the loop's handler reads the clock and ticks the core.
    private func perform(now: MonotonicInstant) {
        let deadline = core.perform(now: now, edge: self)
        if let timer { loop.cancel(timer) }
        timer = deadline.map { deadline in
            loop.after(deadline.since(now)) { [weak self] in self?.deadlinePassed(now: .now()) }
        }
    }

    private func deadlinePassed(now: MonotonicInstant) {
        timer = nil
        core.tick(now: now)
        perform(now: now)
    }

    /// A UDP reply joins `queue`; a TCP one is written to its connection.
    private func reply(_ response: [UInt8], to client: DNSClient, queue: inout DatagramQueue) {
        if case let .local(id) = client {
            localWaiters.removeValue(forKey: id)?(response.isEmpty ? nil : response)
            return
        }
        guard !response.isEmpty else { return }
        switch client {
        case let .udp(fd, from, asked):
            queue.append(OutgoingDatagram(bytes: response, destination: from, source: asked), on: fd)
        case let .tcp(fd):
            guard let framed = DNSTCPFraming.frame(response), tcpClients[fd] != nil else { return }
            tcpClients[fd]?.outbox += framed
            flushClient(fd)
        case .local: return
        }
    }
}

extension ProfileResolver: ResolverEdge {
    func sendForwards(_ forwards: [(query: [UInt8], server: DNSServer)]) -> [[UInt8]] {
        var queue = DatagramQueue()
        for (query, server) in forwards {
            guard let fd = upstream[server.address.isIPv4] else { continue }
            queue.append(OutgoingDatagram(bytes: query, destination: Endpoint(address: server.address, port: server.port)), on: fd)
        }
        return io.send(queue).map(\.datagram.bytes)
    }

    /// False when the connection is refused at once (no route, a firewall).
    func forwardOverTCP(_ query: [UInt8], to server: DNSServer) -> Bool {
        guard let framed = DNSTCPFraming.frame(query), let fd = try? connect(to: server) else { return false }
        tcpUpstreams[fd] = UpstreamConnection(server: server, query: framed)
        loop.watch(fd, events: Int16(POLLOUT)) { [unowned self] events in serviceUpstream(fd, events, now: .now()) }
        // The proxy retries and fails by its own clock; the connection goes after that.
        loop.after(Self.connectionLifetime) { [weak self] in self?.dropUpstream(fd) }
        return true
    }

    func deliver(_ replies: [(response: [UInt8], client: DNSClient)]) {
        var queue = DatagramQueue()
        for (response, client) in replies { reply(response, to: client, queue: &queue) }
        io.send(queue)
    }
}
