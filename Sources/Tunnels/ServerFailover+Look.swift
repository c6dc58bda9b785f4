import Monotonic
import WireGuard

extension ServerFailover {
    /// What the server choice reads of a running tunnel at one look, as values: the engine's
    /// latest handshake, its unanswered initiations to its (one) server since then, and when
    /// the network under it last changed (taken once: BuiltInTunnels.looks); all on the
    /// monotonic clock.
    public struct Look: Hashable, Sendable {
        public var lastHandshake: MonotonicInstant?
        public var failed: UInt64
        public var networkChanged: MonotonicInstant?

        public init(lastHandshake: MonotonicInstant? = nil, failed: UInt64 = 0, networkChanged: MonotonicInstant? = nil) {
            self.lastHandshake = lastHandshake
            self.failed = failed
            self.networkChanged = networkChanged
        }

        /// The engine's first peer at `now`.
        public init(engine: Engine, now: MonotonicInstant, networkChanged: MonotonicInstant? = nil) {
            let reconnection = engine.reconnection(now: now).first
            self.init(lastHandshake: engine.status.peers.first?.lastHandshakeAt,
                      failed: reconnection.map { ServerChoice.failedInitiations(attempts: $0.attempts, retryScheduled: $0.nextTry != nil) } ?? 0,
                      networkChanged: networkChanged)
        }
    }
}
