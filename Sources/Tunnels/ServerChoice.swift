import Monotonic
import Policy

/// Which of a built-in tunnel's servers (ServerList) is in use, and why: a pure value fed
/// with the monotonic clock, the engine's latest handshake on it and its count of failed
/// initiations, as the engine's timers are. vpnd runs one server at a time; to try another it starts the
/// tunnel afresh with that server's file (the same interface: the killswitch holds members
/// meanwhile), or sets another Endpoint of the same file on the running engine, and asks
/// for a handshake at once.
/// - failover: a server gives way to the next in order (after the last, the first again)
///   once `failoverAfter` initiations to it went unanswered (`tunnel.failover_after`,
///   default 3): counted by the engine, spaced by its reconnect schedule, so the time this
///   takes is the schedule's (5 + 5 + 5 s with WireGuard's, 5 + 10 + 20 s with a backoff
///   from 5 s). The same holds for a server in use: when it stops answering while members
///   send, the engine starts handshakes (after WireGuard's 15 s) and they are counted. A
///   session that has expired (`sessionLifetime`, no handshake for 180 s: an idle tunnel)
///   is tested; and an idle tunnel on a later server goes back to the first (the preferred)
///   then, at most once per `preferredRetry` after the first last failed, so nothing in use
///   is cut off and a dead first server costs one test every 10 minutes, not a flap.
/// - fastest: at connect (and after a network change) each server in turn gets a
///   handshake; the shortest round trip (from asking to the completed handshake) wins, and
///   a server that did not answer before `failoverAfter` failed initiations never does.
///   Then it behaves as failover, without going back to a preferred server.
public struct ServerChoice: Hashable, Sendable {
    public static let sessionLifetime = MonotonicInstant.Duration.seconds(180)
    public static let preferredRetry = MonotonicInstant.Duration.seconds(600)
    public static let defaultFailoverAfter = 3

    public enum Action: Hashable, Sendable {
        case none
        /// Ask the running tunnel for a handshake now.
        case probe
        /// Start the tunnel afresh with this server, then ask for a handshake.
        case use(Int)
    }

    enum Phase: Hashable, Sendable {
        case starting
        /// Waiting for a handshake since `since`; `baseline`: the engine's failed count when
        /// first looked at in this phase (nil until then: the look that started the phase
        /// saw the previous engine), so a count carried over from another engine is not
        /// charged to this server.
        case probing(since: MonotonicInstant, baseline: UInt64?)
        case up
    }

    public let mode: ServerList.Mode
    public let count: Int
    public let failoverAfter: UInt64
    public private(set) var current = 0
    /// Why the current server is in use.
    public private(set) var reason = "first in order"
    /// fastest: each server's measured round trip, nil while not measured.
    public private(set) var roundTrips: [RoundTrip?]
    /// When each server last failed, for going back to the first.
    public private(set) var failedAt: [MonotonicInstant?]
    private var phase = Phase.starting
    /// fastest: still measuring the servers one by one.
    private var measuring: Bool

    public enum RoundTrip: Hashable, Sendable {
        case measured(MonotonicInstant.Duration)
        /// It did not answer before `failoverAfter` failed initiations.
        case unanswered

        public var duration: MonotonicInstant.Duration? {
            if case let .measured(duration) = self { duration } else { nil }
        }
    }

    public init(mode: ServerList.Mode, count: Int, failoverAfter: Int = defaultFailoverAfter) {
        self.mode = mode
        self.count = max(count, 1)
        self.failoverAfter = UInt64(max(failoverAfter, 1))
        roundTrips = Array(repeating: nil, count: max(count, 1))
        failedAt = Array(repeating: nil, count: max(count, 1))
        measuring = mode == .fastest && count > 1
        if measuring { reason = "measuring the handshake round trip of each server" }
    }

    public var isUp: Bool { phase == .up }

    /// Failed initiations as the engine reports them: its attempts since the last completed
    /// handshake, less the one still waiting for its answer (`waiting`: a retry is
    /// scheduled); with none scheduled (WireGuard's schedule gave up) every one failed.
    public static func failedInitiations(attempts: UInt64, retryScheduled: Bool) -> UInt64 {
        retryScheduled && attempts > 0 ? attempts - 1 : attempts
    }

    /// One look: `now` and `lastHandshake` on the monotonic clock (nil: none yet); `failed`:
    /// the running engine's failed initiations since its last handshake (failedInitiations).
    public mutating func step(now: MonotonicInstant, lastHandshake: MonotonicInstant?, failed: UInt64 = 0) -> Action {
        switch phase {
        case .starting:
            phase = .probing(since: now, baseline: nil)
            return .probe
        case .up:
            guard let last = lastHandshake, now.since(last) <= Self.sessionLifetime else {
                if mode == .failover && current != 0 && failedAt[0].map({ now.since($0) >= Self.preferredRetry }) ?? true {
                    current = 0
                    reason = "back to the preferred server 1 (the tunnel was idle)"
                    phase = .probing(since: now, baseline: nil)
                    return .use(0)
                }
                phase = .probing(since: now, baseline: nil)
                return .probe
            }
            if failed >= failoverAfter {
                return self.failed(now: now, reason: "server \(current + 1) stopped answering (\(failed) initiations unanswered)")
            }
            return .none
        case let .probing(since, baseline):
            if let last = lastHandshake, last >= since {
                return answered(roundTrip: last.since(since), now: now)
            }
            // A network change starts the engine's count again: so does the baseline.
            guard let baseline, failed >= baseline else {
                phase = .probing(since: since, baseline: failed)
                return .none
            }
            guard failed >= baseline + failoverAfter else { return .none }
            return self.failed(now: now)
        }
    }

    /// The host's network changed: fastest measures again; failover asks the server in use
    /// for a handshake (a new path may have lost it).
    public mutating func networkChanged(now: MonotonicInstant) -> Action {
        if mode == .fastest && count > 1 {
            measuring = true
            roundTrips = Array(repeating: nil, count: count)
            reason = "network changed: measuring the handshake round trip of each server"
        }
        phase = .probing(since: now, baseline: nil)
        return .probe
    }

    /// The handshake asked for leaves later than asked (another Endpoint of the same key: the
    /// engine's floor of REKEY_TIMEOUT between two initiations to one peer holds): the round
    /// trip counts from then, so a wait is not charged to the server.
    public mutating func initiationLeaves(at time: MonotonicInstant) {
        guard case let .probing(since, baseline) = phase, time > since else { return }
        phase = .probing(since: time, baseline: baseline)
    }

    private mutating func answered(roundTrip: MonotonicInstant.Duration, now: MonotonicInstant) -> Action {
        roundTrips[current] = .measured(roundTrip)
        guard measuring else {
            phase = .up
            return .none
        }
        return nextMeasurement(now: now)
    }

    private mutating func failed(now: MonotonicInstant, reason why: String? = nil) -> Action {
        let failedIndex = current
        roundTrips[failedIndex] = .unanswered
        failedAt[failedIndex] = now
        if measuring { return nextMeasurement(now: now) }
        current = (current + 1) % count
        reason = why ?? "server \(failedIndex + 1) left \(failoverAfter) initiations unanswered"
        phase = .probing(since: now, baseline: nil)
        return count > 1 ? .use(current) : .probe
    }

    /// fastest: the next server not measured yet, or the winner once all are.
    private mutating func nextMeasurement(now: MonotonicInstant) -> Action {
        phase = .probing(since: now, baseline: nil)
        if let next = roundTrips.firstIndex(where: { $0 == nil }) {
            current = next
            return .use(next)
        }
        measuring = false
        let measured = roundTrips.enumerated().compactMap { index, rtt in rtt?.duration.map { (index, $0) } }
        guard let best = measured.min(by: { $0.1 < $1.1 }) else {
            // None answered: on in order, as failover.
            current = (current + 1) % count
            reason = "no server answered \(failoverAfter) initiations; trying them in order"
            return .use(current)
        }
        let others = measured.filter { $0.0 != best.0 }.map { "server \($0.0 + 1) \(Self.inWords($0.1))" }
        reason = "fastest: handshake in \(Self.inWords(best.1))" + (others.isEmpty ? "" : " (" + others.joined(separator: ", ") + ")")
        if best.0 == current {
            phase = .up
            return .none
        }
        current = best.0
        return .use(best.0)
    }

    /// Whole milliseconds, rounded (status's `roundTripsMs`, the reason's words).
    public static func milliseconds(_ duration: MonotonicInstant.Duration) -> Int {
        Int((Double(duration.nanoseconds) / 1e6).rounded())
    }

    static func inWords(_ duration: MonotonicInstant.Duration) -> String { "\(milliseconds(duration)) ms" }
}
