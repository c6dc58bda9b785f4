import CLinux
import Descriptors
import Glibc
import Monotonic
import Synchronization
import WireGuard

/// The device's side of `TunnelDemand`: the machine behind a lock, and its actions done on
/// the engine through its public API. Down, the engine's peers have no session, no key, no
/// timer and no staged packet (`Engine.resetSessions`: the peers and their byte counters
/// stay) and their persistent keepalive is off, so nothing in the engine can send; up, the keepalives come back and a
/// handshake starts at once (as for a persistent keepalive), before the first packet.
final class DemandControl: @unchecked Sendable {
    private struct State {
        var machine: TunnelDemand
        /// The peers' persistent keepalives, kept aside while the tunnel is down.
        var keepalives: [PublicKey: UInt16] = [:]
    }

    private let state: Mutex<State>
    private let engine: Engine
    private let udp: UDPSocket
    private let report: @Sendable (TunnelDemand.Phase, _ why: String) -> Void
    /// Readable (an eventfd) when the tunnel came up from another thread: the timer loop,
    /// which sleeps while the tunnel is down, ticks the engine again.
    private let wake: FileDescriptor
    /// `wake`'s number, lent for poll() and read() on the timer thread.
    var wakeFD: Int32 { wake.raw }
    private let inbound: Atomic<Bool>
    /// When data last came in from the server (monotonic nanoseconds), stored by the
    /// receiving loop without the lock; the idle countdown reads it at each tick.
    private let lastReceived = Atomic<UInt64>(0)

    init(settings: TunnelDemand.Settings, engine: Engine, udp: UDPSocket, now: MonotonicInstant,
         report: @escaping @Sendable (TunnelDemand.Phase, _ why: String) -> Void) throws {
        self.engine = engine
        self.udp = udp
        self.report = report
        wake = try FileDescriptor("eventfd", returned: eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)))
        var initial = State(machine: TunnelDemand(settings: settings, now: now))
        inbound = Atomic(initial.machine.acceptsInbound)
        if !initial.machine.isRunning { Self.tearDown(engine, &initial) }
        state = Mutex(initial)
    }

    var snapshot: TunnelDemand { state.withLock { $0.machine } }

    var acceptsInbound: Bool { inbound.load(ordering: .relaxed) }

    var isRunning: Bool { state.withLock { $0.machine.isRunning } }

    enum Gate {
        /// Up or connecting: `body` ran (with the lock held, so no teardown happens between
        /// the verdict and the engine seeing the packets).
        case open
        /// Held down: drop what waits.
        case held
        /// Down on demand: offer the packets one by one (`offer`).
        case down
    }

    /// Packets wait in the TUN.
    func admit(now: MonotonicInstant, _ body: () -> Void) -> Gate {
        state.withLock { s in
            switch s.machine.phase {
            case .heldDown: return .held
            case .downOnDemand: return .down
            case .connecting, .up:
                _ = s.machine.packets(now: now)
                body()
                return .open
            }
        }
    }

    /// Down on demand, a packet read from the TUN: true if it is for a peer (the tunnel comes
    /// up, and the engine holds the packet until the handshake completes) or the tunnel came
    /// up meanwhile; false: drop it.
    func offer(_ packet: UnsafeRawBufferPointer, now: MonotonicInstant) -> Bool {
        state.withLock { s in
            switch s.machine.phase {
            case .heldDown: return false
            case .connecting, .up: return true
            case .downOnDemand:
                guard let destination = DemandTrigger.destination(of: packet),
                      DemandTrigger.triggers(destination, allowedIPs: engine.status.peers.flatMap(\.allowedIPs)) else { return false }
                let before = s.machine.phase
                _ = s.machine.packets(now: now, destination: destination.description)
                perform(.bringUp, &s, from: before)
                return true
            }
        }
    }

    func noteReceived(_ now: MonotonicInstant) { lastReceived.store(now.nanoseconds, ordering: .relaxed) }

    /// Every ~100 ms while running: a completed handshake (always-up tunnels too: connecting
    /// from the start until one), the idle countdown.
    func tick(now: MonotonicInstant) {
        state.withLock { s in
            let before = s.machine.phase
            s.machine.traffic(at: MonotonicInstant(nanoseconds: lastReceived.load(ordering: .relaxed)))
            if s.machine.phase == .connecting, engine.status.peers.contains(where: { $0.lastHandshake != nil }) {
                s.machine.handshakeCompleted(now: now)
            }
            perform(s.machine.tick(now: now), &s, from: before)
        }
    }

    func membersChanged(present: Bool, now: MonotonicInstant, why: TunnelDemand.Reason = .member) { change(now) { $0.membersChanged(present: present, now: now, why: why) } }
    func holdUp(now: MonotonicInstant) { change(now) { $0.holdUp(now: now) } }
    func holdDown(now: MonotonicInstant) { change(now) { $0.holdDown(now: now) } }
    func release(now: MonotonicInstant) { change(now) { $0.release(now: now) } }

    private func change(_ now: MonotonicInstant, _ event: (inout TunnelDemand) -> TunnelDemand.Action?) {
        state.withLock { s in
            let before = s.machine.phase
            perform(event(&s.machine), &s, from: before)
        }
    }

    private func perform(_ action: TunnelDemand.Action?, _ s: inout State, from before: TunnelDemand.Phase) {
        let now = s.machine.since
        // Before the action: the server's answer to the initiation bringUp sends may be back
        // before bringUp returns, and must not be dropped as if the tunnel were down.
        inbound.store(s.machine.acceptsInbound, ordering: .sequentiallyConsistent)
        switch action {
        case .bringUp?:
            bringUp(&s, now: now)
        case .tearDown?:
            Self.tearDown(engine, &s)
        case nil:
            break
        }
        if s.machine.phase != before {
            report(s.machine.phase, s.machine.why)
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Keepalives back on, and a handshake now: an empty packet staged for each peer with an
    /// endpoint starts it (the engine sends it once the session is there).
    private func bringUp(_ s: inout State, now: MonotonicInstant) {
        let wall = WallClock.now()
        for peer in engine.status.peers {
            // One set with `wg set` while down is the administrator's newer word: kept.
            if let keepalive = s.keepalives.removeValue(forKey: peer.publicKey), (peer.persistentKeepalive ?? 0) == 0 {
                engine.upsertPeer(Self.configuration(of: peer, keepalive: keepalive), replaceAllowedIPs: true)
            }
            if peer.endpoint != nil { engine.keepalive(peer.publicKey, now: now, wall: wall) }
        }
        for datagram in engine.drainOutput() {
            datagram.bytes.withUnsafeBytes { _ = udp.send($0, to: datagram.to) }
        }
    }

    /// Every peer's sessions, keys (zeroed as they go), timers and staged packets dropped,
    /// and its persistent keepalive set aside; the peer, its configuration and its byte
    /// counters stay.
    private static func tearDown(_ engine: Engine, _ s: inout State) {
        for peer in engine.status.peers {
            if let keepalive = peer.persistentKeepalive, keepalive > 0 {
                s.keepalives[peer.publicKey] = keepalive
                engine.upsertPeer(configuration(of: peer, keepalive: nil), replaceAllowedIPs: true)
            }
            engine.resetSessions(peer.publicKey)
        }
        _ = engine.drainOutput()
    }

    private static func configuration(of peer: PeerStatus, keepalive: UInt16?) -> PeerConfiguration {
        PeerConfiguration(publicKey: peer.publicKey, presharedKey: peer.presharedKey, endpoint: peer.endpoint,
                          allowedIPs: peer.allowedIPs, persistentKeepalive: keepalive)
    }
}
