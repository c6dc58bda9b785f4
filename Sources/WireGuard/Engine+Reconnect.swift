import Addresses
import Monotonic

/// One peer's reconnection, as status shows it.
public struct PeerReconnection: Sendable, Hashable {
    public var publicKey: PublicKey
    /// Initiations since the last completed handshake (or network change).
    public var attempts: UInt64
    public var lastError: ReconnectError?
    /// When the next initiation leaves, from now; nil when none is due (up, or given up
    /// until new traffic).
    public var nextTry: MonotonicInstant.Duration?
    public var schedule: ReconnectPolicy
}

/// The reconnection strategy's entry points: the policy, the host's network changes, send
/// errors from the I/O, and what status reads.
extension Engine {
    /// A new policy for every peer; their counts and windows stay.
    public func setReconnectPolicy(_ policy: ReconnectPolicy?) {
        state.withLock { s in
            s.reconnectPolicy = policy ?? .protocolDefault(timing)
            for peer in s.peers.values { peer.reconnect.setPolicy(s.reconnectPolicy) }
        }
    }

    /// The schedule in force.
    public var reconnectPolicyInForce: ReconnectPolicy { state.withLock { $0.reconnectPolicy } }

    /// The host's network changed (default route, or the address the UDP leaves from):
    /// each peer with an endpoint gets a new handshake now, within the floor and the storm
    /// limit, and its backoff starts again. The datagrams come out of `drainOutput`/`tick`.
    public func networkChanged(now: MonotonicInstant, wall: WallClock) {
        state.withLock { $0.networkChanged(now: now, wall: wall) }
    }

    /// A datagram to `endpoint` could not be sent: the handshake under way with a peer
    /// there records why.
    public func sendFailed(to endpoint: Endpoint, error: String) {
        state.withLock { s in
            for peer in s.peers.values where peer.configuration.endpoint == endpoint && peer.pending != nil {
                peer.reconnect.lastError = .sendFailed(error)
            }
        }
    }

    /// Each peer's schedule, for the engine that replaces this one (a reload with a changed
    /// file): the storm limit and the floor then count across the restart.
    public var reconnectSchedules: [PublicKey: ReconnectSchedule] {
        state.withLock { s in Dictionary(s.peers.values.map { ($0.configuration.publicKey, $0.reconnect) }, uniquingKeysWith: { a, _ in a }) }
    }

    /// Takes over a previous engine's schedules for the peers it shares (under this
    /// engine's policy).
    public func adoptReconnectSchedules(_ schedules: [PublicKey: ReconnectSchedule]) {
        state.withLock { s in
            for peer in s.peers.values {
                guard var schedule = schedules[peer.configuration.publicKey] else { continue }
                schedule.setPolicy(s.reconnectPolicy)
                peer.reconnect = schedule
            }
        }
    }

    public func reconnection(now: MonotonicInstant) -> [PeerReconnection] {
        state.withLock { s in
            s.peers.values.sorted { $0.id < $1.id }.map { peer in
                PeerReconnection(publicKey: peer.configuration.publicKey, attempts: peer.reconnect.attempts,
                                 lastError: peer.reconnect.lastError,
                                 nextTry: peer.timers.retransmitHandshake.map { $0.since(now) },
                                 schedule: peer.reconnect.policy)
            }
        }
    }
}

extension EngineState {
    mutating func networkChanged(now: MonotonicInstant, wall: WallClock) {
        for peer in peers.values.sorted(by: { $0.id < $1.id }) where peer.configuration.endpoint != nil {
            peer.reconnect.networkChanged()
            peer.timers.handshakeAttempts = 0
            if let allowed = peer.reconnect.hold(now) {
                if peer.timers.retransmitHandshake.map({ $0 > allowed }) ?? true { peer.timers.retransmitHandshake = allowed }
            } else {
                initiate(peer, now: now, wall: wall, retry: true)
            }
        }
    }
}
