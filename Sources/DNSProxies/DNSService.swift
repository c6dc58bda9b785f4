import Addresses
import CLinux
import DNS
import Descriptors
import Cgroups
import Glibc
import Monotonic
import Names
import Netlink
import Plan
import Policy
import ServiceSupport
import SocketPrograms
import Applying
import DaemonLoop

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
public final class DNSService {
    /// Where the resolvers and names servers answer (nil until `register(on:)`).
    private var loop: EventLoop?
    private let log: Log
    private let io = DatagramIO()
    private(set) var resolvers: [String: ProfileResolver] = [:]
    /// What each resolver was built from, to rebuild only what changed.
    private var built: [String: ResolverSettings] = [:]
    /// Shared by every profile's resolver: they fill the same route.domains sets.
    private let filler: SetFiller
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

    /// Where each profile's varlink server listens (nil: names are not followed here).
    private let resolveDirectory: String?
    /// The profiles' varlink servers (nil where names are not followed).
    private var names: ProfileNameServers?
    /// Whom each profile's names server answers, as the last apply left them.
    private(set) var members = ProfileMembers()

    public init(applier: any KernelApplying, log: Log, steering: DNSSteeringPoint?, resolveDirectory: String? = nil) {
        self.resolveDirectory = resolveDirectory
        filler = SetFiller(applier: applier, log: log)
        self.log = log
        self.steering = steering
    }

    /// Its event sources on the loop: the steering sockets, and the profiles' varlink
    /// servers (made on it). Until then `configure` makes no resolver: they answer on it.
    public func register(on loop: EventLoop) {
        self.loop = loop
        if resolveDirectory != nil {
            names = ProfileNameServers(loop: loop, answering: self)
        }
        for fd in [steering?.socket.number, steering?.socket6.number].compactMap({ $0 }) {
            loop.watch(fd) { [unowned self] _ in receiveSteeredQueries(fd, now: .now()) }
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
    private func receiveSteeredQueries(_ fd: DescriptorNumber, now: MonotonicInstant) {
        var touched: Set<String> = []
        io.receive(fd, control: true) { query, from, control in
            // The program hands over only what comes from a served key's address; another
            // is a reload's race, and goes unanswered.
            guard let key = DNSSteering.key(of: from.address), let name = byKey[key], let resolver = resolvers[name] else { return }
            resolver.steeredQuery(query, from: from, control: control, socket: fd, now: now)
            touched.insert(name)
        }
        for name in touched { resolvers[name]?.performPending(now: now) }
    }

    /// One resolver per profile (ResolverSettings), each asking the profile's `chosen`
    /// resolvers; only those whose settings changed are made again.
    public func configure(_ policy: Policy, resolvers chosen: [String: ProfileResolvers]) {
        guard let loop else { return }
        let wanted = ResolverSettings.all(policy, resolvers: chosen)
        for (name, resolver) in resolvers where wanted[name] != built[name] {
            resolver.close()
            resolvers[name] = nil
            built[name] = nil
        }
        for (name, settings) in wanted.sorted(by: { $0.key < $1.key }) where resolvers[name] == nil {
            let configuration = settings.configuration
            do {
                resolvers[name] = try ProfileResolver(settings, loop: loop, io: io, filler: filler)
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

    /// After each apply: the member cgroups of each profile, by name (its names server
    /// answers only processes in them).
    public func applied(memberCgroups: [String: [String]]) {
        members = ProfileMembers(cgroups: memberCgroups)
    }

    public func nameCounters(of profile: String) -> NameServer.Counters? { names?.server(of: profile)?.counters }
    public func nameSocket(of profile: String) -> String? { names?.server(of: profile)?.path }

    /// What members get from a proxy that is not there (DNSRouting.steeredQueryGuards).
    public static let refused = "members' DNS queries are refused (none leaves)"

    /// Why a profile's proxy does not run, for status (nil: it runs, or DNS is not its).
    private var failures: [String: String] = [:]
    private var steeringFailure: String?

    public func failure(of profile: String) -> String? { steeringFailure ?? failures[profile] }

    public func counters(of profile: String) -> DNSProxyCounters? { resolvers[profile]?.core.proxy.counters }

    public func sharedAddresses(of profile: String, now: MonotonicInstant) -> [DNSSharedAddress] {
        resolvers[profile]?.core.proxy.sharedAddresses(now: now) ?? []
    }

    public func closeAll() {
        names?.closeAll()
        for resolver in resolvers.values { resolver.close() }
        resolvers = [:]
        built = [:]
    }
}
