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
/// messages go to a thread of their own (`HandshakeWorker`). The tunnel ends by itself when its interface is deleted, as
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
    private let wake: FileDescriptor
    /// Readable (an eventfd) once the tunnel has ended by itself: its interface was deleted.
    private let ended: FileDescriptor
    /// `ended`'s number, lent for poll() while the tunnel is held.
    public var endedFD: Int32 { ended.raw }
    private let stopping = Atomic<Bool>(false)
    private let deleted = Atomic<Bool>(false)
    private let load: HandshakeLoad
    private let mtuWatch: MTUWatch
    /// The interface's MTU as last seen; the loops resize their buffers when it changes.
    private let mtu: Atomic<Int>
    private var threads: [LoopThread] = []
    /// Whether the tunnel is up, down on demand or held down, and the actions between.
    let demand: DemandControl
    /// Encryptions and decryptions the helper threads did (the rest ran on the loops).
    private let sealsHelped = HelperCounter(), opensHelped = HelperCounter()
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
    private func interfaceGone() {
        guard !deleted.exchange(true, ordering: .sequentiallyConsistent) else { return }
        options.events(.interfaceDeleted)
        requestStop()
        var one: UInt64 = 1
        _ = write(ended.raw, &one, 8)
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    @inline(__always)
    func now() -> MonotonicInstant { MonotonicInstant.now() }

    @inline(__always)
    func wall() -> WallClock {
        WallClock.now()
    }

    private func send(_ datagrams: [Datagram]) {
        for d in datagrams {
            d.bytes.withUnsafeBytes { if !udp.send($0, to: d.to) { engine.sendFailed(to: d.to, error: SystemError("send", code: errno).reason) } }
        }
    }

    // MARK: TUN -> network

    private func outboundLoop() {
        var batchMTU = mtu.load(ordering: .relaxed)
        var batch = DatagramBatch(capacity: 64, slotSize: Self.slotSize(mtu: batchMTU), headroom: 16)
        let seals = SealJobs(capacity: batch.capacity)
        let helper = options.parallelCrypto ? CryptoHelper(name: "wg-seal-\(tun.name)", counter: sealsHelped) { seals.perform($0) } : nil
        defer { helper?.stop() }
        // With offloads one read may be a 64 KiB TCP super-packet, cut into the batch's slots.
        let frameSize = tun.hasVirtioHeader ? TunOffload.headerSize + 65_536 : 0
        let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: frameSize, alignment: 64)
        defer { frame.deallocate() }
        var fds = [pollfd(fd: tun.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.raw, events: Int16(POLLIN), revents: 0)]
        var slot = 0
        var clock = now(), wallClock = wall()
        // Encrypts what the batch holds (on both cores when it is worth it), then sends it:
        // the datagrams leave in the order the engine numbered them.
        func flush() {
            if let helper { helper.run(seals.count, bytes: seals.bytes) } else { seals.perform(0..<seals.count) }
            seals.clear()
            batch.flush(to: udp)
            slot = 0
        }
        // The packet's room in the current slot: headroom for the transport header before it,
        // padding and tag after it.
        func room() -> UnsafeMutableRawBufferPointer {
            if slot == batch.capacity { flush() }
            let buffer = batch.slot(slot)
            return UnsafeMutableRawBufferPointer(rebasing: buffer[16..<(buffer.count - 32)])
        }
        func encapsulate(length: Int) {
            var seal: PendingSeal?
            switch engine.encapsulate(buffer: batch.slot(slot), packet: 16..<(16 + length), now: clock, wall: wallClock, deferring: &seal) {
            case let .send(range, to: endpoint):
                if let seal { seals.add(seal) }
                batch.enqueue(slot: slot, range: range, to: endpoint, dualStack: udp.isDualStack)
                slot += 1
            case let .queued(handshake):
                send(handshake)
            case .drop:
                break
            }
        }
        // Reads what waits in the TUN, a batch's worth, into the engine.
        func readBatch() {
            while slot < batch.capacity {
                if tun.hasVirtioHeader {
                    let n = read(tun.fd, frame.baseAddress, frame.count)
                    if n < 0 && errno == EBADFD { interfaceGone() }
                    if n <= 0 { break }
                    // Closures, not the local functions themselves: a local function passed
                    // as a value costs a heap allocation per call here.
                    let cut = TunOffload.split(UnsafeRawBufferPointer(rebasing: frame[0..<n]), next: { room() }, emit: { encapsulate(length: $0) })
                    if !cut { engine.countDrop(.malformed) }
                } else {
                    let buffer = room()
                    let n = read(tun.fd, buffer.baseAddress, buffer.count)
                    if n < 0 && errno == EBADFD { interfaceGone() }
                    if n <= 0 { break }
                    encapsulate(length: n)
                }
            }
        }
        // Down on demand: packets one by one until one is for a peer; it brings the tunnel up
        // and goes to the engine (the rest wait for the next round). The others are dropped.
        func offerWaiting() {
            while true {
                if tun.hasVirtioHeader {
                    let n = read(tun.fd, frame.baseAddress, frame.count)
                    if n < 0 && errno == EBADFD { interfaceGone() }
                    if n <= 0 { return }
                    guard n > TunOffload.headerSize,
                          demand.offer(UnsafeRawBufferPointer(rebasing: frame[TunOffload.headerSize..<n]), now: clock) else { continue }
                    if !TunOffload.split(UnsafeRawBufferPointer(rebasing: frame[0..<n]), next: { room() }, emit: { encapsulate(length: $0) }) {
                        engine.countDrop(.malformed)
                    }
                } else {
                    let buffer = room()
                    let n = read(tun.fd, buffer.baseAddress, buffer.count)
                    if n < 0 && errno == EBADFD { interfaceGone() }
                    if n <= 0 { return }
                    guard demand.offer(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), now: clock) else { continue }
                    encapsulate(length: n)
                }
                return
            }
        }
        // A deleted interface makes the TUN poll as an error and read as EBADFD, for good.
        let gone = Int16(POLLERR | POLLHUP | POLLNVAL)
        while !isStopping {
            guard retryingInterrupted({ poll(&fds, 2, -1) }) >= 0 else { break }
            if fds[1].revents != 0 || isStopping { break }
            if fds[0].revents & gone != 0 { interfaceGone(); break }
            if batchMTU != mtu.load(ordering: .relaxed) {
                batchMTU = mtu.load(ordering: .relaxed)
                batch = DatagramBatch(capacity: 64, slotSize: Self.slotSize(mtu: batchMTU), headroom: 16)
            }
            clock = now()
            wallClock = wall()
            slot = 0
            // Down on demand, the first packet for a peer brings the tunnel up; held down, none.
            switch demand.admit(now: clock, { readBatch() }) {
            case .open: break
            case .down: offerWaiting()
            case .held:
                while read(tun.fd, frameSize > 0 ? frame.baseAddress : batch.slot(0).baseAddress, frameSize > 0 ? frame.count : batch.slot(0).count) > 0 {}
                continue
            }
            flush()
            // Rekeys that this traffic triggered go out now, not at the next tick.
            send(engine.drainOutput())
        }
    }

    // MARK: network -> TUN

    private func inboundLoop() {
        var batchMTU = mtu.load(ordering: .relaxed)
        // A slot of a coalescing socket holds a run of up to 64 KiB.
        func receiveSlot() -> Int { udp.receivesCoalesced ? Self.coalescedSlotSize : Self.slotSize(mtu: batchMTU) }
        var batch = DatagramBatch(capacity: 64, slotSize: receiveSlot(), headroom: 0)
        // With offloads, a batch's TCP segments reach the kernel coalesced (GRO).
        let coalescer = tun.hasVirtioHeader ? TunCoalescer(capacity: 512) : nil
        let opens = OpenJobs(capacity: 256)
        let helper = options.parallelCrypto ? CryptoHelper(name: "wg-open-\(tun.name)", counter: opensHelped) { opens.perform($0) } : nil
        defer { helper?.stop() }
        let handshakes = HandshakeWorker(name: "wg-hs-\(tun.name)", engine: engine) { [self] in send($0) }
        defer { handshakes.stop() }
        var clock = now(), wallClock = wall()
        var delivered = false
        func flushToTun() { coalescer?.flush { if !tun.write(vectors: $0) { engine.countDrop(.tunRefused) } } }
        func deliver(_ result: Engine.Inbound, in buffer: UnsafeMutableRawBufferPointer) {
            switch result {
            case let .deliver(range):
                delivered = true
                // The transport header in front of the plaintext, consumed, makes room for
                // the virtio-net header.
                if let coalescer {
                    if coalescer.isFull { flushToTun() }
                    coalescer.add(UnsafeMutableRawBufferPointer(rebasing: buffer[range]))
                } else if !tun.write(UnsafeRawBufferPointer(rebasing: buffer[range])) { engine.countDrop(.tunRefused) }
            case .keepalive, .drop:
                break
            case let .control(datagrams):
                send(datagrams)
            }
        }
        // Decrypts the waiting transport messages (on both cores when it is worth it), then
        // lets the engine accept them one by one in the order they arrived.
        func finishOpens() {
            guard opens.count > 0 else { return }
            if let helper { helper.run(opens.count, bytes: opens.bytes) } else { opens.perform(0..<opens.count) }
            for j in 0..<opens.count {
                let (pending, buffer) = opens.job(j)
                deliver(engine.finishDecapsulating(pending, buffer: buffer, now: clock, wall: wallClock), in: buffer)
            }
            opens.clear()
        }
        while !isStopping {
            if batchMTU != mtu.load(ordering: .relaxed) {
                batchMTU = mtu.load(ordering: .relaxed)
                batch = DatagramBatch(capacity: 64, slotSize: receiveSlot(), headroom: 0)
            }
            // Nothing, or empty datagrams: the socket was moved to another port (or is
            // stopping) while this waited on it; the next receive waits on the new one.
            guard let count = batch.receive(from: udp) else { continue }
            // Down, nothing reaches the engine: a server's initiation would bring a session up.
            guard demand.acceptsInbound else { continue }
            clock = now()
            wallClock = wall()
            delivered = false
            for i in 0..<count {
                let length = batch.receivedLength(i)
                guard length > 0, let sender = batch.sender(i) else { continue }
                let buffer = batch.slot(i)
                let step = batch.segmentSize(i)
                var start = 0
                while start < length {
                    let datagram = start..<min(start + step, length)
                    start = datagram.upperBound
                    let type = buffer[datagram.lowerBound]
                    if type != MessageType.transport.rawValue, type <= MessageType.cookieReply.rawValue, type > 0,
                       datagram.count <= MessageSize.initiation {
                        // Handshakes go to their own thread; a full queue is a flood.
                        let underLoad = (type == MessageType.initiation.rawValue ? load.countInitiation(now: clock.nanoseconds)
                                         : load.isUnderLoad(now: clock.nanoseconds)) || handshakes.isBacklogged
                        if !handshakes.enqueue(UnsafeRawBufferPointer(rebasing: buffer[datagram]), from: sender, underLoad: underLoad) {
                            engine.countDrop(.rateLimited)
                        }
                        continue
                    }
                    switch engine.beginDecapsulating(buffer: buffer, datagram: datagram, from: sender,
                                                     underLoad: false, now: clock, wall: wallClock) {
                    case let .open(pending):
                        if opens.isFull { finishOpens() }
                        opens.add(pending, in: buffer)
                    case let .done(result):
                        deliver(result, in: buffer)
                    }
                }
            }
            finishOpens()
            flushToTun()
            if delivered { demand.noteReceived(clock) }
            send(engine.drainOutput())
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

/// Counts handshake initiations per second, so a flood turns on cookie replies (the
/// mac2 check) without the engine needing a clock of its own.
final class HandshakeLoad: @unchecked Sendable {
    private let threshold: Int
    private let window = Mutex<(start: UInt64, count: Int, underLoadUntil: UInt64)>((0, 0, 0))

    init(threshold: Int) { self.threshold = threshold }

    func countInitiation(now: UInt64) -> Bool {
        window.withLock { w in
            if now &- w.start >= 1_000_000_000 { w = (now, 0, w.underLoadUntil) }
            w.count += 1
            // Once over the threshold, stay under load for a second: a flood must not toggle it per packet.
            if w.count > threshold { w.underLoadUntil = now + 1_000_000_000 }
            return now < w.underLoadUntil
        }
    }

    func isUnderLoad(now: UInt64) -> Bool { window.withLock { now < $0.underLoadUntil } }
}
