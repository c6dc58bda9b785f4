import Addresses
import CLinux
import Descriptors
import Glibc
import Monotonic
import Synchronization
import WireGuard

/// One running tunnel: a TUN interface, a UDP socket and the protocol engine between them,
/// driven by three threads — TUN to network, network to TUN (the two directions run on both
/// cores at once), and a timer thread that also serves the userspace API socket and follows
/// the interface's MTU. Each direction's loop shares its batch's cryptography with a helper
/// thread (`CryptoHelper`), so one busy direction can use both cores, and handshake
/// messages go to a thread of their own (`HandshakeWorker`); the two directions' loops are
/// RunningTunnel+Outbound.swift and RunningTunnel+Inbound.swift. The tunnel ends by itself when its interface is deleted, as
/// wireguard-go's does: `endedFD` becomes readable and the `wg` socket goes.
/// With `Options.demand` on demand, it starts down (`DemandControl`): the interface is there,
/// the engine has nothing to send and the timer thread sleeps until a member or a packet
/// for a peer brings it up.
public final class RunningTunnel: @unchecked Sendable {
    public struct Options: Sendable {
        public var interfaceName: String
        public var mtu: Int
        /// Where the `wg` tool looks for IFACE.sock; nil serves no socket.
        public var uapiDirectory: String?
        public var timing: Timing
        /// Handshake initiations per second above which the engine answers with cookies.
        public var handshakeLoadThreshold: Int
        /// Let the kernel hand us TCP super-packets (TSO) that we segment ourselves.
        public var offloads: Bool
        /// Send runs of datagrams as one (UDP GSO) and take coalesced ones (UDP GRO).
        public var udpOffloads: Bool
        /// Share each batch's encryption or decryption with a helper thread per direction.
        public var parallelCrypto: Bool
        /// What the tunnel reports (refused `wg` requests, a deleted interface...), from its threads.
        public var events: @Sendable (TunnelEvent) -> Void
        /// Up from the start, or down until needed (TunnelDemand).
        public var demand = TunnelDemand.Settings.alwaysUp

        public init(interfaceName: String, mtu: Int = 1420, uapiDirectory: String? = "/var/run/wireguard",
                    timing: Timing = .standard, handshakeLoadThreshold: Int = 1000, offloads: Bool = true,
                    udpOffloads: Bool = true, parallelCrypto: Bool = true, events: @escaping @Sendable (TunnelEvent) -> Void = { _ in }) {
            self.interfaceName = interfaceName
            self.mtu = mtu
            self.uapiDirectory = uapiDirectory
            self.timing = timing
            self.handshakeLoadThreshold = handshakeLoadThreshold
            self.offloads = offloads
            self.udpOffloads = udpOffloads
            self.parallelCrypto = parallelCrypto
            self.events = events
        }
    }

    public let engine: Engine
    public let tun: TunDevice
    public let udp: UDPSocket
    public let options: Options
    private let uapi: UAPIServer?
    let wake: FileDescriptor
    /// Readable (an eventfd) once the tunnel has ended by itself: its interface was deleted.
    private let ended: FileDescriptor
    /// `ended`'s number, lent for poll() while the tunnel is held.
    public var endedFD: Int32 { ended.raw }
    private let stopping = Atomic<Bool>(false)
    private let deleted = Atomic<Bool>(false)
    let load: HandshakeLoad
    private let mtuWatch: MTUWatch
    /// The interface's MTU as last seen; the loops resize their buffers when it changes.
    let mtu: Atomic<Int>
    private var threads: [LoopThread] = []
    /// Whether the tunnel is up, down on demand or held down, and the actions between.
    let demand: DemandControl
    /// Encryptions and decryptions the helper threads did (the rest ran on the loops).
    let sealsHelped = HelperCounter(), opensHelped = HelperCounter()
    public var helperJobs: (sealed: Int, opened: Int) {
        (sealsHelped.jobs.load(ordering: .relaxed), opensHelped.jobs.load(ordering: .relaxed))
    }

    public init(configuration: InterfaceConfiguration, options: Options) throws {
        _ = Sodium.ready
        self.options = options
        mtuWatch = try MTUWatch(interface: options.interfaceName)
        mtu = Atomic(options.mtu)
        tun = try TunDevice(name: options.interfaceName, offloads: options.offloads)
        udp = try UDPSocket(port: configuration.listenPort ?? 0, mark: configuration.fwmark, offloads: options.udpOffloads)
        var effective = configuration
        effective.listenPort = udp.port
        engine = Engine(configuration: effective, timing: options.timing, mtu: options.mtu)
        wake = try FileDescriptor("eventfd", returned: eventfd(0, Int32(EFD_CLOEXEC)))
        ended = try FileDescriptor("eventfd", returned: eventfd(0, Int32(EFD_CLOEXEC)))
        load = HandshakeLoad(threshold: options.handshakeLoadThreshold)
        demand = try DemandControl(settings: options.demand, engine: engine, udp: udp, now: MonotonicInstant.now(),
                                   report: { [events = options.events] in events(.demandChanged($0, why: $1)) })
        let flags = fcntl(tun.fd, F_GETFL)
        _ = fcntl(tun.fd, F_SETFL, flags | O_NONBLOCK)
        if let directory = options.uapiDirectory {
            uapi = try UAPIServer(directory: directory, interface: tun.name)
        } else {
            uapi = nil
        }
    }

    deinit { uapi?.close() }

    public func start() {
        threads = [
            LoopThread(name: "wg-out-\(tun.name)") { [self] in outboundLoop() },
            LoopThread(name: "wg-in-\(tun.name)") { [self] in inboundLoop() },
            LoopThread(name: "wg-timer-\(tun.name)") { [self] in timerLoop() },
        ]
    }

    /// Stops the threads and waits for them (also after the tunnel ended by itself); the
    /// interface goes when the tunnel is released. Call it from the thread that started it.
    public func stop() {
        requestStop()
        for t in threads { t.join() }
        threads = []
        uapi?.close()
    }

    /// Whether the tunnel ended because its interface was deleted.
    public var interfaceWasDeleted: Bool { deleted.load(ordering: .sequentiallyConsistent) }

    /// Tells every loop to end: the poll loops through the eventfd, the receiving loop by
    /// shutting the socket down under it.
    private func requestStop() {
        guard !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var one: UInt64 = 1
        _ = write(wake.raw, &one, 8)
        udp.shutdown()
    }

    /// The TUN reported its interface gone: end, and tell the owner.
    func interfaceGone() {
        guard !deleted.exchange(true, ordering: .sequentiallyConsistent) else { return }
        options.events(.interfaceDeleted)
        requestStop()
        var one: UInt64 = 1
        _ = write(ended.raw, &one, 8)
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    @inline(__always)
    func now() -> MonotonicInstant { MonotonicInstant.now() }

    @inline(__always)
    func wall() -> WallClock {
        WallClock.now()
    }

    func send(_ datagrams: [Datagram]) {
        for d in datagrams {
            d.bytes.withUnsafeBytes { if !udp.send($0, to: d.to) { engine.sendFailed(to: d.to, error: SystemError("send", code: errno).reason) } }
        }
    }

    // MARK: timers and the userspace API

    private func timerLoop() {
        // Gone with the loop: `wg show` must not list a tunnel that ended by itself.
        defer { uapi?.close() }
        var fds = [pollfd(fd: wake.raw, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: uapi?.fd ?? -1, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: mtuWatch.fileDescriptor, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: demand.wakeFD, events: Int16(POLLIN), revents: 0)]
        var nextTick = MonotonicInstant.now().nanoseconds
        followMTU()
        // Peers with persistent keepalive hear from us at once, as after `wg setconf`.
        for peer in engine.status.peers where (peer.persistentKeepalive ?? 0) > 0 {
            engine.keepalive(peer.publicKey, now: now(), wall: wall())
        }
        while !isStopping {
            let current = MonotonicInstant.now().nanoseconds
            // Down, the engine has no timers to fire: sleep until the tunnel comes up.
            let running = demand.isRunning
            let waitMs = !running ? -1 : current >= nextTick ? 0 : Int32((nextTick - current) / 1_000_000)
            let ready = poll(&fds, 4, waitMs)
            if isStopping || fds[0].revents != 0 { break }
            if ready > 0, fds[1].revents != 0, let uapi {
                uapi.serveOne(tunnel: self)
            }
            if ready > 0, fds[2].revents != 0 { followMTU() }
            if ready > 0, fds[3].revents != 0 {
                var count: UInt64 = 0
                _ = read(demand.wakeFD, &count, 8)
            }
            if running, MonotonicInstant.now().nanoseconds >= nextTick {
                send(engine.tick(now: now(), wall: wall()))
                send(engine.drainOutput())
                demand.tick(now: now())
                nextTick = MonotonicInstant.now().nanoseconds + 100_000_000
            }
        }
    }

    private func followMTU() {
        guard let current = mtuWatch.current(), current != mtu.load(ordering: .relaxed) else { return }
        mtu.store(current, ordering: .relaxed)
        engine.setMTU(current)
        options.events(.mtuChanged(current))
    }

    /// Room for the largest packet the MTU allows plus the transport header, padding and tag.
    static func slotSize(mtu: Int) -> Int { (max(mtu, 1280) + 16 + 16 + 32 + 63) & ~63 }

    /// Room for the largest run the kernel coalesces into one datagram.
    static let coalescedSlotSize = 65_536
}
