import Monotonic
import Plan
import WireGuard

extension ServerFailover {
    /// What the server choice reads of a running tunnel at one look, as values: the engine's
    /// latest handshake (wall clock, as the engine keeps it), its unanswered initiations to
    /// its (one) server since then, and when the network under it last changed (taken once:
    /// BuiltInTunnels.looks).
    public struct Look: Hashable, Sendable {
        public var lastHandshake: WallClock?
        public var failed: UInt64
        public var networkChanged: WallClock?

        public init(lastHandshake: WallClock? = nil, failed: UInt64 = 0, networkChanged: WallClock? = nil) {
            self.lastHandshake = lastHandshake
            self.failed = failed
            self.networkChanged = networkChanged
        }

        /// The engine's first peer at `now`.
        public init(engine: Engine, now: MonotonicInstant, networkChanged: WallClock? = nil) {
            let reconnection = engine.reconnection(now: now).first
            self.init(lastHandshake: engine.status.peers.first?.lastHandshake,
                      failed: reconnection.map { ServerChoice.failedInitiations(attempts: $0.attempts, retryScheduled: $0.nextTry != nil) } ?? 0,
                      networkChanged: networkChanged)
        }
    }
}
