import Addresses
import CLinux
import DNS
import Descriptors
import Cgroups
import Glibc
import Monotonic
import Names
import Netlink
import Nftables
import Plan
import Policy
import ServiceSupport
import SocketPrograms
import Applying
import DaemonLoop

/// One profile's proxy and its sockets.
final class ProfileResolver {
    let profile: String
    private(set) var proxy: DNSProxy<DNSClient>
    private let loop: EventLoop
    private let io: DatagramIO
    private let applier: any KernelApplying
    private let lifetimes: ElementLifetimes
    private let log: Log
    private let mark: UInt32
    private let steered: SteeredQueries
    /// Every socket below: the upstream sockets, the TCP connections.
    private var owned = DescriptorTable()
    private var sockets: [DescriptorNumber] = []
    private var tcpClients: [DescriptorNumber: TCPPeer] = [:]
    private var tcpUpstreams: [DescriptorNumber: TCPUpstream] = [:]
    private var upstream: [Bool: DescriptorNumber] = [:]
    private var timer: Int?
    private var actions: [DNSProxyAction<DNSClient>] = []
    static let maxTCPClients = 64

    struct TCPPeer {
        var reader = DNSTCPReader()
        var outbox: [UInt8] = []
        var opened: MonotonicInstant
    }

    struct TCPUpstream {
        var server: DNSServer
        var query: [UInt8]
        var reader = DNSTCPReader()
        var connected = false
    }

    init(profile: String, configuration: DNSProxyConfiguration, mark: UInt32, steered: SteeredQueries,
         loop: EventLoop, io: DatagramIO, applier: any KernelApplying, lifetimes: ElementLifetimes, log: Log) throws {
        self.profile = profile
        self.loop = loop
        self.io = io
        self.applier = applier
        self.lifetimes = lifetimes
        self.log = log
        self.mark = mark
        self.steered = steered
        proxy = try DNSProxy(configuration: configuration, random: KernelRandom())
        do {
            for ipv4 in [true, false] {
                let fd = owned.insert(try Self.socket(ipv4 ? AF_INET : AF_INET6, SOCK_DGRAM, mark: mark))
                sockets.append(fd)
                upstream[ipv4] = fd
                loop.watch(fd) { [unowned self] _ in receiveAnswers(fd) }
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

    /// The datagrams waiting on `fd` (a burst, one system call), each handed to `body`
    /// with its sender; then the proxy's actions for all of them at once (one batch of
    /// fills, one send of the replies).
    private func receiveBurst(_ fd: DescriptorNumber, _ body: ([UInt8], Endpoint) -> Void) {
        io.receive(fd, body)
        perform()
    }

    /// A query the steering socket read for this profile (DNSService passes it by its
    /// source address); answered on that socket, from the address it asked.
    func steeredQuery(_ query: [UInt8], from: Endpoint, control: ReceivedControl, socket: DescriptorNumber) {
        guard steered.accepts(control.mark), let asked = control.asked else {
            proxy.dropForeignQuery()
            return
        }
        proxy.query(query, from: .udp(socket: socket, from: from, asked: asked), over: .udp, now: .now(), into: &actions)
    }

    func performPending() { perform() }

    private var localWaiters: [Int: ([UInt8]?) -> Void] = [:]
    private var nextLocal = 0

    /// A lookup from the profile's varlink server, as a member's port-53 query: the same
    /// servers, lists and sets, its addresses added before `answer` has the reply. Without
    /// a reply in 10 s (the proxy drops some), `answer` has nil.
    func localQuery(_ query: [UInt8], overTCP: Bool, _ answer: @escaping ([UInt8]?) -> Void) {
        nextLocal += 1
        let id = nextLocal
        localWaiters[id] = answer
        loop.after(.seconds(10)) { [weak self] in self?.localWaiters.removeValue(forKey: id)?(nil) }
        proxy.query(query, from: .local(id), over: overTCP ? .tcp : .udp, now: .now(), into: &actions)
        perform()
    }

    /// A TCP connection the steering listener took for this profile (DNSService passes it
    /// by its source address), with the mark of the socket that made it, or made by a routed
    /// container of the profile: one of another mark (a socket bound to the address by hand,
    /// another profile's member) is closed and counted, as a datagram with another mark is.
    func steeredConnection(_ connection: consuming FileDescriptor, mark: UInt32?, fromContainer: Bool = false) {
        guard fromContainer || steered.accepts(mark) else {
            proxy.dropForeignQuery()
            return
        }
        guard tcpClients.count < Self.maxTCPClients else { return }
        let fd = owned.insert(connection)
        tcpClients[fd] = TCPPeer(opened: .now())
        loop.watch(fd) { [unowned self] events in serviceClient(fd, events) }
        loop.after(.seconds(10)) { [weak self] in self?.dropClient(fd) }
    }

    private func serviceClient(_ fd: DescriptorNumber, _ events: Int16) {
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
            proxy.query(message, from: .tcp(connection: fd), over: .tcp, now: .now(), into: &actions)
        }
        perform()
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

    private func receiveAnswers(_ fd: DescriptorNumber) {
        receiveBurst(fd) { answer, from in
            proxy.upstreamAnswer(answer, from: DNSServer(address: from.address, port: from.port), now: .now(), into: &actions)
        }
    }

    /// False when the connection is refused at once (no route, a firewall).
    private func forwardOverTCP(_ query: [UInt8], to server: DNSServer) -> Bool {
        guard let framed = DNSTCPFraming.frame(query), let fd = try? connect(to: server) else { return false }
        tcpUpstreams[fd] = TCPUpstream(server: server, query: framed)
        loop.watch(fd, events: Int16(POLLOUT)) { [unowned self] events in serviceUpstream(fd, events) }
        // The proxy retries and fails by its own clock; the connection goes after that.
        loop.after(.seconds(10)) { [weak self] in self?.dropUpstream(fd) }
        return true
    }

    /// A connection to `server` under way (non-blocking), owned here.
    private func connect(to server: DNSServer) throws(SystemError) -> DescriptorNumber {
        let socket = try Self.socket(server.address.isIPv4 ? AF_INET : AF_INET6, SOCK_STREAM, mark: mark)
        let target = Endpoint(address: server.address, port: server.port)
        let started = target.withSockaddr { Glibc.connect(socket.raw, $0, $1) }
        guard started == 0 || errno == EINPROGRESS else { throw SystemError("connect") }
        return owned.insert(socket)
    }

    private func serviceUpstream(_ fd: DescriptorNumber, _ events: Int16) {
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
            proxy.upstreamAnswer(answer, from: connection.server, now: .now(), into: &actions)
            dropUpstream(fd)
            perform()
        }
    }

    private func dropUpstream(_ fd: DescriptorNumber) {
        guard tcpUpstreams.removeValue(forKey: fd) != nil else { return }
        loop.unwatch(fd)
        owned.close(fd)
    }

    // MARK: actions

    /// Carries out what the proxy decided, then arms its next deadline. The fills of a
    /// burst of answers go to the kernel in one batch; their replies follow its
    /// acknowledgement (or are refused together if it refused).
    /// A forward the kernel refuses at once (no route while the tunnel is down) goes back
    /// to the proxy, which tries the next server or answers SERVFAIL in the same round.
    private func perform() {
        while !actions.isEmpty {
            let pending = actions
            actions.removeAll(keepingCapacity: true)
            var forwards = DatagramQueue()
            var replies = DatagramQueue()
            var fills: [DNSSetElement] = []
            var filled: [([UInt8], DNSClient)] = []
            for action in pending {
                switch action {
                case let .forward(query, server, transport):
                    if transport == .tcp {
                        if !forwardOverTCP(query, to: server) { proxy.forwardFailed(query, now: .now(), into: &actions) }
                    } else if let fd = upstream[server.address.isIPv4] {
                        forwards.append(OutgoingDatagram(bytes: query, destination: Endpoint(address: server.address, port: server.port)), on: fd)
                    }
                case let .reply(response, client, _):
                    reply(response, to: client, queue: &replies)
                case let .fillThenReply(elements, response, client, _):
                    fills += elements
                    filled.append((response, client))
                }
            }
            for (_, refused) in io.send(forwards) {
                proxy.forwardFailed(refused.bytes, now: .now(), into: &actions)
            }
            if !filled.isEmpty {
                let accepted = fill(fills)
                for (response, client) in filled {
                    reply(accepted ? response : DNSErrorReply.make(answering: response, code: .serverFailure) ?? [], to: client, queue: &replies)
                }
            }
            io.send(replies)
        }
        if let timer { loop.cancel(timer) }
        timer = nil
        if let deadline = proxy.nextDeadline() {
            timer = loop.after(deadline.since(.now())) { [weak self] in
                guard let self else { return }
                self.timer = nil
                self.proxy.tick(now: .now(), into: &self.actions)
                self.perform()
            }
        }
    }

    /// The elements into their sets, acknowledged by the kernel; false if it refused. An
    /// address asked for twice in the burst gets the longer timeout, and none gets a
    /// shorter one than its element has left.
    private func fill(_ elements: [DNSSetElement]) -> Bool {
        let now = MonotonicInstant.now()
        let elements = lifetimes.table.lengthened(elements, now: now)
        var bySet: [String: [IPAddress: UInt32]] = [:]
        for element in elements { bySet[element.set, default: [:]][element.address] = max(bySet[element.set]?[element.address] ?? 0, element.timeoutSeconds) }
        let entries = bySet.mapValues { addresses in
            addresses.map { NftElement(key: .prefix(IPPrefix(address: $0.key, length: $0.key.bitCount)!), timeout: $0.value) }
        }
        do {
            try applier.addRuntimeElements(entries)
            lifetimes.table.added(elements, now: now)
            return true
        } catch {
            log.error("DNS proxy of profile \(profile): could not add \(elements.count) address(es) to \(bySet.keys.sorted().joined(separator: ", ")): \(error); the answers are refused")
            return false
        }
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
