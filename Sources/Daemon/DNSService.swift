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

/// Who asked the proxy: a UDP client (by the socket it wrote to and its address) or a TCP
/// connection.
enum DNSClient: Hashable {
    /// `asked`: the address a steered query was sent to, which its answer comes from.
    case udp(socket: DescriptorNumber, from: Endpoint, asked: IPAddress? = nil)
    case tcp(connection: DescriptorNumber)
    /// A lookup of a member's that came over resolved's varlink interface (NameServer).
    case local(Int)
}

/// The profiles' DNS proxies, at the edge: members' queries arrive routed to the host with
/// the profile's steering address as their source (DNSRouting), whatever address they
/// asked, on the socket of their family and transport the steering program hands them to
/// (`DNSSteeringPoint`), and go to the profile's resolver by that source address:
/// - over UDP, each datagram taken if it carries the profile's mark; the answer leaves
///   from the address asked;
/// - over TCP, each connection taken if the socket that made it carries the profile's
///   mark (the kernel says, `SocketDiag`); it has the address asked as its own.
/// Nothing else listens: no port of the proxies' own is open to any local user.
/// The pure `DNSProxy` decides; its upstream queries leave from sockets carrying the
/// profile's mark (so they are routed into its tunnel, killswitch included, like a
/// member's) and the proxy's bit (so they are not routed back to it); the
/// addresses it learns go into the nft sets through the applier, acknowledged, before the
/// answer is sent.
final class DNSService {
    private let loop: EventLoop
    private let applier: any KernelApplying
    private let log: Log
    private let io = DatagramIO()
    private var resolvers: [String: ProfileResolver] = [:]
    /// What each resolver was built from, to rebuild only what changed.
    private var built: [String: ResolverSettings] = [:]
    /// Shared by every profile's resolver: they fill the same route.domains sets.
    private let lifetimes = ElementLifetimes()
    /// nil where the kernel would not take the steering program: members' queries are then
    /// refused (none leaves), as the log said at start.
    private let steering: DNSSteeringPoint?
    /// Who made a steered TCP connection (nil: none is taken, each is closed).
    private let diag = try? SocketDiag()
    /// What made one that no socket of this namespace made: a routed container's, its source
    /// translated to the steering address by ContainerRules (nil: none such is taken).
    private let conntrack = try? Conntrack()
    /// The resolver for each steering key.
    private var byKey: [UInt32: String] = [:]

    struct ResolverSettings: Hashable {
        var configuration: DNSProxyConfiguration
        var mark: UInt32
        var steered: SteeredQueries
    }

    /// Where each profile's varlink server listens (nil: names are not followed here).
    private let resolveDirectory: String?
    /// The profiles' varlink servers (nil where names are not followed).
    private(set) var names: ProfileNameServers?

    init(loop: EventLoop, applier: any KernelApplying, log: Log, steering: DNSSteeringPoint?, resolveDirectory: String? = nil) {
        self.resolveDirectory = resolveDirectory
        self.loop = loop
        self.applier = applier
        self.log = log
        self.steering = steering
        if resolveDirectory != nil {
            names = ProfileNameServers(loop: loop) { [unowned self] profile, query, overTCP, answer in
                guard let resolver = resolvers[profile] else { return answer(nil) }
                resolver.localQuery(query, overTCP: overTCP, answer)
            }
        }
        for fd in [steering?.socket.number, steering?.socket6.number].compactMap({ $0 }) {
            loop.watch(fd) { [unowned self] _ in receiveSteeredQueries(fd) }
        }
        for fd in [steering?.listener.number, steering?.listener6.number].compactMap({ $0 }) {
            loop.watch(fd) { [unowned self] _ in acceptSteeredConnections(fd) }
        }
    }

    /// The connections waiting on a steering listener, each to the resolver of the profile
    /// its source address names, with the mark of the socket that made it.
    private func acceptSteeredConnections(_ listener: DescriptorNumber) {
        while true {
            let accepted = vx_accept4(listener.raw, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
            guard accepted >= 0 else { return }
            let connection = FileDescriptor(adopting: accepted)
            // The program hands over only what comes from a served key's address; another
            // is a reload's race, or a connection to the listener's own port: closed.
            guard let peer = Endpoint.peer(of: connection.raw), let local = Endpoint.local(of: connection.raw),
                  let key = DNSSteering.key(of: peer.address), let name = byKey[key], let resolver = resolvers[name] else { continue }
            let mark = (try? diag?.markOfTCPConnection(from: peer.address, port: peer.port, to: local.address, port: local.port)) ?? nil
            resolver.steeredConnection(connection, mark: mark, fromContainer: mark == nil && fromContainer(peer: peer, local: local))
        }
    }

    /// A steered connection no socket here made is a routed container's (or a forward
    /// interface's) when the kernel translated its source to the steering address it comes
    /// from: only ContainerRules' input-hook NAT does, and only for what arrives on a way of
    /// the profile that address names. A local process bound to that address (whose socket
    /// went: reset, closed) or a packet from the LAN with it as its source (IPv6's is no
    /// martian) has no translation.
    private func fromContainer(peer: Endpoint, local: Endpoint) -> Bool {
        guard let entry = (try? conntrack?.tcpConnection(replyFrom: local.address, port: local.port, to: peer.address, port: peer.port)) ?? nil else { return false }
        return entry.sourceTranslated && entry.originalSource != peer.address
    }

    /// A burst from the steering socket, each query to the resolver of the profile its
    /// source address names, then each resolver's actions.
    private func receiveSteeredQueries(_ fd: DescriptorNumber) {
        var touched: Set<String> = []
        io.receive(fd, control: true) { query, from, control in
            // The program hands over only what comes from a served key's address; another
            // is a reload's race, and goes unanswered.
            guard let key = DNSSteering.key(of: from.address), let name = byKey[key], let resolver = resolvers[name] else { return }
            resolver.steeredQuery(query, from: from, control: control, socket: fd)
            touched.insert(name)
        }
        for name in touched { resolvers[name]?.performPending() }
    }

    /// One resolver per profile, with the profile's servers (`resolvers`: its `dns`, else
    /// its tunnel's) and every list whose sets its answers can fill: its own
    /// bypass.domains (and then the tunneled sets for every other name), and every
    /// profile's route.domains.
    func configure(_ policy: Policy, resolvers chosen: [String: ProfileResolvers]) {
        var wanted: [String: ResolverSettings] = [:]
        let routeLists = policy.profiles.filter { !$0.routeDomains.isEmpty }.map { profile in
            let names = ProfileObjectNames(profile.name)
            return DNSDomainSets(patterns: profile.routeDomains, ipv4Set: names.routeDomainSet(ipv4: true), ipv6Set: names.routeDomainSet(ipv4: false))
        }
        for profile in policy.profiles {
            let names = ProfileObjectNames(profile.name)
            let servers = (chosen[profile.name]?.servers ?? profile.dnsServers).map { DNSServer(address: $0) }
            var lists = routeLists
            var tunneled: DNSTunneledSets?
            if !profile.bypassDomains.isEmpty {
                lists.insert(DNSDomainSets(patterns: profile.bypassDomains, ipv4Set: names.bypassDomainSet(ipv4: true),
                                           ipv6Set: names.bypassDomainSet(ipv4: false)), at: 0)
                tunneled = DNSTunneledSets(bypassList: 0, ipv4Set: names.tunneledDomainSet(ipv4: true), ipv6Set: names.tunneledDomainSet(ipv4: false))
            }
            let configuration = DNSProxyConfiguration(servers: servers, domainSets: Array(lists.prefix(DomainList.maxLists)), tunneledSets: tunneled,
                                                      elementTimeout: policy.dns.minTTL...max(policy.dns.minTTL, policy.dns.maxTTL))
            let steered = SteeredQueries(key: profile.index, mask: policy.routing.markMask,
                                         marks: [profile.mark.value] + (policy.systemProfile?.name == profile.name ? [0] : []))
            wanted[profile.name] = ResolverSettings(configuration: configuration, mark: profile.mark.value | policy.routing.proxyMark, steered: steered)
        }
        for (name, resolver) in resolvers where wanted[name] != built[name] {
            resolver.close()
            resolvers[name] = nil
            built[name] = nil
        }
        for (name, settings) in wanted.sorted(by: { $0.key < $1.key }) where resolvers[name] == nil {
            let configuration = settings.configuration
            do {
                resolvers[name] = try ProfileResolver(profile: name, configuration: configuration, mark: settings.mark, steered: settings.steered,
                                                      loop: loop, io: io, applier: applier, lifetimes: lifetimes, log: log)
                built[name] = settings
                failures[name] = nil
                // None: an error with the fix, when it starts and whenever they go.
                if let choice = chosen[name], choice.servers.isEmpty {
                    log.error("DNS proxy: \(choice.problem ?? "profile \(name) has no DNS resolvers: members' queries are refused")")
                } else {
                    log.info("DNS proxy of profile \(name): resolvers \(chosen[name]?.description ?? configuration.servers.map(\.description).joined(separator: ", "))")
                }
            } catch {
                failures[name] = "\(error)"
                log.error("DNS proxy of profile \(name) did not start: \(error); \(Self.refused)")
            }
        }
        configureNames(policy)
        byKey = Dictionary(resolvers.keys.compactMap { name in built[name].map { ($0.steered.key, name) } }, uniquingKeysWith: { a, _ in a })
        failures = failures.filter { wanted[$0.key] != nil }
        if let steering {
            do {
                try steering.setMark(policy.routing.proxyMark)
                try steering.serve(Set(byKey.keys))
                steeringFailure = nil
            } catch {
                steeringFailure = "\(error)"
                log.error("DNS steering: \(error); \(Self.refused)")
            }
        }
    }

    /// A varlink server for each profile at the path its cgroups' programs send members'
    /// resolved connects to (ProfileNameServers).
    private func configureNames(_ policy: Policy) {
        guard let names, let resolveDirectory else { return }
        let wanted = ResolveSocketPath.paths(directory: resolveDirectory, profiles: policy.profiles.map { ($0.name, $0.index) })
        for (name, failure) in names.configure(wanted).sorted(by: { $0.key < $1.key }) {
            log.error("names of profile \(name): \(failure); its members' lookups through systemd-resolved fail (nss-resolve answers UNAVAIL, nsswitch's next source is asked)")
        }
    }

    func nameCounters(of profile: String) -> NameServer.Counters? { names?.server(of: profile)?.counters }
    func nameSocket(of profile: String) -> String? { names?.server(of: profile)?.path }

    /// What members get from a proxy that is not there (DNSRouting.steeredQueryGuards).
    static let refused = "members' DNS queries are refused (none leaves)"

    /// Why a profile's proxy does not run, for status (nil: it runs, or DNS is not its).
    private var failures: [String: String] = [:]
    private var steeringFailure: String?

    func failure(of profile: String) -> String? { steeringFailure ?? failures[profile] }

    func counters(of profile: String) -> DNSProxyCounters? { resolvers[profile]?.proxy.counters }

    func sharedAddresses(of profile: String) -> [DNSSharedAddress] {
        resolvers[profile]?.proxy.sharedAddresses(now: MonotonicInstant.now()) ?? []
    }

    func closeAll() {
        names?.closeAll()
        for resolver in resolvers.values { resolver.close() }
        resolvers = [:]
        built = [:]
    }
}

/// When the elements the proxies added expire (`DNSElementLifetimes`), shared by them.
final class ElementLifetimes {
    var table = DNSElementLifetimes()
}

/// Which steered queries a profile's resolver takes: those routed from its address (`key`)
/// that carry its mark under `mask` (or no mark at all, for the system profile). Another
/// mark is a socket bound to the address by hand, or another profile's member: dropped
/// and counted, as it must not fill this profile's sets.
struct SteeredQueries: Hashable {
    var key: UInt32
    var mask: UInt32
    var marks: [UInt32]

    func accepts(_ mark: UInt32?) -> Bool {
        guard let mark else { return false }
        return marks.contains { $0 == 0 ? mark == 0 : mark & mask == $0 }
    }
}

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
