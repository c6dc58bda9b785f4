import Policy

/// Which of a built-in tunnel's servers (ServerList) is in use, and why: a pure value fed
/// with the wall clock and the engine's latest handshake, as the engine's timers are.
/// vpnd runs one server at a time; to try another it starts the tunnel afresh with that
/// server's file (the same interface: the killswitch holds members meanwhile) and asks for
/// a handshake at once.
/// - failover: the current server must complete a handshake within `handshakeWindow`
///   (15 s: the first initiation and two retries at WireGuard's 5 s), else the next one in
///   order (after the last, the first again). Once up, a server that stops answering while
///   members send (`silenceLimit`: data sent and nothing received for 30 s, which covers
///   WireGuard's own 15 s before a new handshake and that handshake's 15 s) gives way the
///   same way, and a session that has expired (`sessionLifetime`, no handshake for 180 s:
///   an idle tunnel) is tested.
/// - fastest: at connect (and after a network change) each server in turn gets one
///   handshake; the shortest round trip (from asking to the completed handshake) wins, and
///   a server that did not answer within the window never does. Then it behaves as failover.
public struct ServerChoice: Hashable, Sendable {
    public static let handshakeWindow = 15.0
    public static let sessionLifetime = 180.0
    public static let silenceLimit = 30.0

    public enum Action: Hashable, Sendable {
        case none
        /// Ask the running tunnel for a handshake now.
        case probe
        /// Start the tunnel afresh with this server, then ask for a handshake.
        case use(Int)
    }

    enum Phase: Hashable, Sendable {
        case starting
        case probing(since: Double)
        case up
    }

    public let mode: ServerList.Mode
    public let count: Int
    public private(set) var current = 0
    /// Why the current server is in use.
    public private(set) var reason = "first in order"
    /// fastest: each server's measured round trip (seconds), nil while not measured,
    /// infinity when it did not answer.
    public private(set) var roundTrips: [Double?]
    private var phase = Phase.starting
    /// fastest: still measuring the servers one by one.
    private var measuring: Bool
    /// When the engine last received anything (its byte count then), and what it had sent.
    private var silence = Silence(since: 0, received: 0, sentThen: 0)

    struct Silence: Hashable, Sendable {
        var since: Double
        var received: UInt64
        var sentThen: UInt64
    }

    public init(mode: ServerList.Mode, count: Int) {
        self.mode = mode
        self.count = max(count, 1)
        roundTrips = Array(repeating: nil, count: max(count, 1))
        measuring = mode == .fastest && count > 1
        if measuring { reason = "measuring the handshake round trip of each server" }
    }

    public var isUp: Bool { phase == .up }

    /// One look: `now` and `lastHandshake` in wall-clock seconds (nil: none yet); the bytes
    /// the running engine has received from and sent to its server.
    public mutating func step(now: Double, lastHandshake: Double?, received: UInt64 = 0, sent: UInt64 = 0) -> Action {
        if received != silence.received { silence = Silence(since: now, received: received, sentThen: sent) }
        let action = decide(now: now, lastHandshake: lastHandshake, sent: sent)
        // A new engine counts from zero.
        if case .use = action { silence = Silence(since: now, received: 0, sentThen: 0) }
        return action
    }

    private mutating func decide(now: Double, lastHandshake: Double?, sent: UInt64) -> Action {
        switch phase {
        case .starting:
            phase = .probing(since: now)
            return .probe
        case .up:
            guard let last = lastHandshake, now - last <= Self.sessionLifetime else {
                phase = .probing(since: now)
                return .probe
            }
            if sent > silence.sentThen && now - silence.since >= Self.silenceLimit {
                return failed(now: now, reason: "server \(current + 1) stopped answering (data sent, nothing received for \(Int(Self.silenceLimit)) s)")
            }
            return .none
        case let .probing(since):
            if let last = lastHandshake, last >= since {
                silence = Silence(since: now, received: silence.received, sentThen: sent)
                return answered(roundTrip: last - since, now: now)
            }
            guard now - since >= Self.handshakeWindow else { return .none }
            return failed(now: now)
        }
    }

    /// The host's network changed: fastest measures again; failover asks the server in use
    /// for a handshake (a new path may have lost it).
    public mutating func networkChanged(now: Double) -> Action {
        if mode == .fastest && count > 1 {
            measuring = true
            roundTrips = Array(repeating: nil, count: count)
            reason = "network changed: measuring the handshake round trip of each server"
        }
        phase = .probing(since: now)
        return .probe
    }

    private mutating func answered(roundTrip: Double, now: Double) -> Action {
        roundTrips[current] = roundTrip
        guard measuring else {
            phase = .up
            return .none
        }
        return nextMeasurement(now: now)
    }

    private mutating func failed(now: Double, reason why: String? = nil) -> Action {
        let failedIndex = current
        roundTrips[failedIndex] = .infinity
        if measuring { return nextMeasurement(now: now) }
        current = (current + 1) % count
        reason = why ?? "server \(failedIndex + 1) completed no handshake within \(Int(Self.handshakeWindow)) s"
        phase = .probing(since: now)
        return count > 1 ? .use(current) : .probe
    }

    /// fastest: the next server not measured yet, or the winner once all are.
    private mutating func nextMeasurement(now: Double) -> Action {
        phase = .probing(since: now)
        if let next = roundTrips.firstIndex(where: { $0 == nil }) {
            current = next
            return .use(next)
        }
        measuring = false
        let measured = roundTrips.enumerated().compactMap { index, rtt in rtt.flatMap { $0.isFinite ? (index, $0) : nil } }
        guard let best = measured.min(by: { $0.1 < $1.1 }) else {
            // None answered: on in order, as failover.
            current = (current + 1) % count
            reason = "no server completed a handshake within \(Int(Self.handshakeWindow)) s; trying them in order"
            return .use(current)
        }
        let others = measured.filter { $0.0 != best.0 }.map { "server \($0.0 + 1) \(Self.milliseconds($0.1))" }
        reason = "fastest: handshake in \(Self.milliseconds(best.1))" + (others.isEmpty ? "" : " (" + others.joined(separator: ", ") + ")")
        if best.0 == current {
            phase = .up
            return .none
        }
        current = best.0
        return .use(best.0)
    }

    static func milliseconds(_ seconds: Double) -> String { "\(Int((seconds * 1000).rounded())) ms" }
}
