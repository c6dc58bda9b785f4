import Addresses
import CLinux
import Glibc
import Synchronization
import WireGuard

/// One running tunnel: a TUN interface, a UDP socket and the protocol engine between them,
/// driven by three threads — TUN to network, network to TUN (the two directions run on both
/// cores at once), and a timer thread that also serves the userspace API socket.
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

        public init(interfaceName: String, mtu: Int = 1420, uapiDirectory: String? = "/var/run/wireguard",
                    timing: Timing = .standard, handshakeLoadThreshold: Int = 1000, offloads: Bool = true) {
            self.interfaceName = interfaceName
            self.mtu = mtu
            self.uapiDirectory = uapiDirectory
            self.timing = timing
            self.handshakeLoadThreshold = handshakeLoadThreshold
            self.offloads = offloads
        }
    }

    public let engine: Engine
    public let tun: TunDevice
    public let udp: UDPSocket
    public let options: Options
    private let uapi: UAPIServer?
    private let wakeFD: Int32
    private let stopping = Atomic<Bool>(false)
    private let load: HandshakeLoad
    private var threads: [LoopThread] = []

    public init(configuration: InterfaceConfiguration, options: Options) throws {
        _ = Sodium.ready
        self.options = options
        tun = try TunDevice(name: options.interfaceName, offloads: options.offloads)
        udp = try UDPSocket(port: configuration.listenPort ?? 0, mark: configuration.fwmark)
        var effective = configuration
        effective.listenPort = udp.port
        engine = Engine(configuration: effective, timing: options.timing, mtu: options.mtu)
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else { throw SystemCallError("eventfd") }
        load = HandshakeLoad(threshold: options.handshakeLoadThreshold)
        let flags = fcntl(tun.fd, F_GETFL)
        _ = fcntl(tun.fd, F_SETFL, flags | O_NONBLOCK)
        if let directory = options.uapiDirectory {
            uapi = try UAPIServer(directory: directory, interface: tun.name)
        } else {
            uapi = nil
        }
    }

    deinit { close(wakeFD) }

    public func start() {
        threads = [
            LoopThread(name: "wg-out-\(tun.name)") { [self] in outboundLoop() },
            LoopThread(name: "wg-in-\(tun.name)") { [self] in inboundLoop() },
            LoopThread(name: "wg-timer-\(tun.name)") { [self] in timerLoop() },
        ]
    }

    /// Stops the threads and waits for them; the interface goes when the tunnel is released.
    public func stop() {
        guard !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
        shutdown(udp.fd, Int32(SHUT_RDWR))
        for t in threads { t.join() }
        threads = []
        uapi?.close()
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    @inline(__always)
    private func now() -> Timestamp { Timestamp(nanoseconds: Clocks.monotonicNanoseconds()) }

    @inline(__always)
    private func wall() -> WallClock {
        let w = Clocks.wall()
        return WallClock(seconds: w.seconds, nanoseconds: w.nanoseconds)
    }

    private func send(_ datagrams: [Datagram]) {
        for d in datagrams {
            d.bytes.withUnsafeBytes { _ = udp.send($0, to: d.to) }
        }
    }

    // MARK: TUN -> network

    private func outboundLoop() {
        let batch = DatagramBatch(capacity: 64, slotSize: Self.slotSize(mtu: options.mtu), headroom: 16)
        // With offloads one read may be a 64 KiB TCP super-packet, cut into the batch's slots.
        let frameSize = tun.hasVirtioHeader ? TunOffload.headerSize + 65_536 : 0
        let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: frameSize, alignment: 64)
        defer { frame.deallocate() }
        var fds = [pollfd(fd: tun.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        var slot = 0
        // The packet's room in the current slot: headroom for the transport header before it,
        // padding and tag after it.
        func room() -> UnsafeMutableRawBufferPointer {
            if slot == batch.capacity { batch.flush(to: udp); slot = 0 }
            let buffer = batch.slot(slot)
            return UnsafeMutableRawBufferPointer(rebasing: buffer[16..<(buffer.count - 32)])
        }
        func encapsulate(length: Int, now clock: Timestamp, wall wallClock: WallClock) {
            switch engine.encapsulate(buffer: batch.slot(slot), packet: 16..<(16 + length), now: clock, wall: wallClock) {
            case let .send(range, to: endpoint):
                batch.enqueue(slot: slot, range: range, to: endpoint, dualStack: udp.isDualStack)
                slot += 1
            case let .queued(handshake):
                send(handshake)
            case .drop:
                break
            }
        }
        while !isStopping {
            let ready = poll(&fds, 2, -1)
            if ready < 0 { if errno == EINTR { continue }; break }
            if fds[1].revents != 0 || isStopping { break }
            let clock = now(), wallClock = wall()
            slot = 0
            while slot < batch.capacity {
                if tun.hasVirtioHeader {
                    let n = read(tun.fd, frame.baseAddress, frame.count)
                    if n <= 0 { break }
                    let cut = TunOffload.split(UnsafeRawBufferPointer(rebasing: frame[0..<n]), next: room) {
                        encapsulate(length: $0, now: clock, wall: wallClock)
                    }
                    if !cut { engine.countDrop(.malformed) }
                } else {
                    let buffer = room()
                    let n = read(tun.fd, buffer.baseAddress, buffer.count)
                    if n <= 0 { break }
                    encapsulate(length: n, now: clock, wall: wallClock)
                }
            }
            batch.flush(to: udp)
            // Rekeys that this traffic triggered go out now, not at the next tick.
            send(engine.drainOutput())
        }
    }

    // MARK: network -> TUN

    private func inboundLoop() {
        let batch = DatagramBatch(capacity: 64, slotSize: Self.slotSize(mtu: options.mtu), headroom: 0)
        // With offloads, a batch's TCP segments reach the kernel coalesced (GRO).
        let coalescer = tun.hasVirtioHeader ? TunCoalescer(capacity: batch.capacity) : nil
        while !isStopping {
            guard let count = batch.receive(from: udp), count > 0 else { break }
            let clock = now(), wallClock = wall()
            for i in 0..<count {
                let length = batch.receivedLength(i)
                guard let sender = batch.sender(i) else { continue }
                let buffer = batch.slot(i)
                let underLoad = length > 0 && buffer[0] == 1 ? load.countInitiation(now: clock.nanoseconds) : load.isUnderLoad(now: clock.nanoseconds)
                switch engine.decapsulate(buffer: buffer, datagram: 0..<length, from: sender,
                                          underLoad: underLoad, now: clock, wall: wallClock) {
                case let .deliver(range):
                    // The transport header in front of the plaintext, consumed, makes room for
                    // the virtio-net header.
                    if let coalescer { coalescer.add(UnsafeMutableRawBufferPointer(rebasing: buffer[range])) }
                    else if !tun.write(UnsafeRawBufferPointer(rebasing: buffer[range])) { engine.countDrop(.tunRefused) }
                case .keepalive, .drop:
                    break
                case let .control(datagrams):
                    send(datagrams)
                }
            }
            coalescer?.flush { if !tun.write(vectors: $0) { engine.countDrop(.tunRefused) } }
            send(engine.drainOutput())
        }
    }

    // MARK: timers and the userspace API

    private func timerLoop() {
        var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: uapi?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
        var nextTick = Clocks.monotonicNanoseconds()
        while !isStopping {
            let current = Clocks.monotonicNanoseconds()
            let waitMs = current >= nextTick ? 0 : Int32((nextTick - current) / 1_000_000)
            let ready = poll(&fds, 2, waitMs)
            if isStopping || fds[0].revents != 0 { break }
            if ready > 0, fds[1].revents != 0, let uapi {
                uapi.serveOne(tunnel: self)
            }
            if Clocks.monotonicNanoseconds() >= nextTick {
                send(engine.tick(now: now(), wall: wall()))
                send(engine.drainOutput())
                nextTick = Clocks.monotonicNanoseconds() + 100_000_000
            }
        }
    }

    /// Room for the largest packet the MTU allows plus the transport header, padding and tag.
    static func slotSize(mtu: Int) -> Int { (max(mtu, 1280) + 16 + 16 + 32 + 63) & ~63 }
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
