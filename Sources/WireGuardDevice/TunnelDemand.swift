import Monotonic
import WireGuard

/// When a built-in tunnel runs: the state machine behind `on_demand`, `idle` and
/// `vpnctl up/down`. Pure: events and the time come in, the action the device must take
/// comes out (`bringUp`: restore keepalives and start a handshake; `tearDown`: drop the
/// sessions and their keys). The TUN interface, its routes and the killswitch stay in every
/// phase: while down, a packet routed into the tunnel is the universal trigger (or, held
/// down, is dropped).
public struct TunnelDemand: Sendable {
    public struct Settings: Hashable, Sendable {
        /// Down until needed; otherwise running from the start (and after `vpnctl up`).
        public var onDemand: Bool
        /// With onDemand: down again after this long with no members and no traffic.
        public var idle: MonotonicInstant.Duration?

        public init(onDemand: Bool = false, idle: MonotonicInstant.Duration? = nil) {
            self.onDemand = onDemand
            self.idle = idle
        }

        public static let alwaysUp = Settings()
    }

    public enum Phase: String, Sendable, Hashable {
        /// Down until a member or a packet for the tunnel appears.
        case downOnDemand = "down (on demand)"
        /// `vpnctl down`: no handshake even with traffic, until `vpnctl up` or a reload.
        case heldDown = "down (vpnctl down)"
        /// Brought up (or started, always up), no handshake completed since: traffic waits
        /// for one.
        case connecting
        /// A handshake completed since it was brought up (or, always up, started).
        case up

        /// The phase for programs (status's JSON, the metrics' label): a token without spaces;
        /// the raw value is the words for people (logs, status text).
        public var token: String {
            switch self {
            case .downOnDemand: "down-on-demand"
            case .heldDown: "down-held"
            case .connecting: "connecting"
            case .up: "up"
            }
        }
    }

    public enum Reason: String, Sendable, Hashable {
        /// Always up: vpnd started it, connecting until the first handshake.
        case started = "vpnd started the tunnel"
        /// On demand: vpnd started it down, and nothing has needed it since.
        case startedDown = "vpnd started; no member or packet yet"
        case member = "a member appeared"
        /// A multihop exit (tunnel.via) through this tunnel runs: its transport needs it.
        case exit = "a tunnel through it (tunnel.via) runs"
        case packet = "a packet was routed into the tunnel"
        case idle = "idle: no members and no traffic"
        case manualUp = "vpnctl up"
        case manualDown = "vpnctl down"
        case released = "a reload ended the vpnctl hold"
    }

    public enum Action: Sendable, Hashable {
        case bringUp
        case tearDown
    }

    /// What `vpnctl up` / `down` asked, until the other one or a reload.
    public enum Hold: String, Sendable, Hashable {
        case up
        case down
    }

    public let settings: Settings
    public private(set) var phase: Phase
    /// When the phase began.
    public private(set) var since: MonotonicInstant
    /// Why the last transition happened.
    public private(set) var reason: Reason
    public private(set) var hold: Hold?
    /// Where the packet that brought the tunnel up was going ("192.0.2.80"), while that is
    /// the reason: the way to learn which program keeps waking it.
    public private(set) var trigger: String?
    /// The last time a member existed or a packet went through.
    public private(set) var lastActivity: MonotonicInstant
    public private(set) var membersPresent = false

    public init(settings: Settings, now: MonotonicInstant) {
        self.settings = settings
        phase = settings.onDemand ? .downOnDemand : .connecting
        since = now
        reason = settings.onDemand ? .startedDown : .started
        lastActivity = now
    }

    /// The reason as status and the log give it, a packet's with where the packet was going.
    public var why: String { reason.rawValue + (trigger.map { " (to \($0))" } ?? "") }

    /// Whether packets from the network may reach the engine (a server's handshake
    /// initiation while down would bring a session up behind the user's back).
    public var acceptsInbound: Bool { phase == .connecting || phase == .up }

    /// Whether the engine's timers need ticking (down, the engine holds no timers).
    public var isRunning: Bool { acceptsInbound }

    /// When the idle teardown happens if nothing changes; nil when it is not counting.
    public var idleDeadline: MonotonicInstant? {
        guard let idle = settings.idle, settings.onDemand, hold != .up, isRunning, !membersPresent else { return nil }
        return lastActivity + idle
    }

    /// The profile's members appeared or went (vpnd sees cgroups, about once a second), or
    /// (`why: .exit`) a multihop exit through this tunnel runs, which counts as a member.
    public mutating func membersChanged(present: Bool, now: MonotonicInstant, why: Reason = .member) -> Action? {
        if present || membersPresent { lastActivity = now }
        membersPresent = present
        guard present, phase == .downOnDemand else { return nil }
        return enter(.connecting, why, now: now, action: .bringUp)
    }

    public enum PacketVerdict: Sendable, Hashable {
        /// Hand the packets to the engine.
        case pass
        /// Bring the tunnel up first, then hand them to the engine (which holds them until
        /// the handshake completes).
        case bringUpThenPass
        /// Held down: drop them.
        case drop
    }

    /// Packets were read from the TUN (members', or anyone's routed into the tunnel); down,
    /// `destination` is the first one's (the device passes only packets for a peer).
    public mutating func packets(now: MonotonicInstant, destination: String? = nil) -> PacketVerdict {
        switch phase {
        case .heldDown:
            return .drop
        case .downOnDemand:
            lastActivity = now
            _ = enter(.connecting, .packet, now: now, action: .bringUp)
            trigger = destination
            return .bringUpThenPass
        case .connecting, .up:
            lastActivity = now
            return .pass
        }
    }

    /// Data came through the tunnel from the server.
    public mutating func traffic(at time: MonotonicInstant) {
        if time > lastActivity { lastActivity = time }
    }

    /// A handshake completed (the device sees it in the engine's status while connecting).
    /// The reason stays the one that brought the tunnel up: "up since 12:03 (a member
    /// appeared)" says more than "the handshake completed".
    public mutating func handshakeCompleted(now: MonotonicInstant) {
        guard phase == .connecting else { return }
        phase = .up
        since = now
    }

    /// The clock moved: the idle teardown, when it is due.
    public mutating func tick(now: MonotonicInstant) -> Action? {
        if membersPresent { lastActivity = now }
        guard let deadline = idleDeadline, now >= deadline else { return nil }
        return enter(.downOnDemand, .idle, now: now, action: .tearDown)
    }

    /// `vpnctl up`: up now, and no idle teardown until `vpnctl down` or a reload.
    public mutating func holdUp(now: MonotonicInstant) -> Action? {
        hold = .up
        lastActivity = now
        guard !isRunning else { return nil }
        return enter(.connecting, .manualUp, now: now, action: .bringUp)
    }

    /// `vpnctl down`: down now, and no handshake even with traffic, until `vpnctl up` or a reload.
    public mutating func holdDown(now: MonotonicInstant) -> Action? {
        hold = .down
        switch phase {
        case .heldDown: return nil
        case .downOnDemand: return enter(.heldDown, .manualDown, now: now, action: nil)
        case .connecting, .up: return enter(.heldDown, .manualDown, now: now, action: .tearDown)
        }
    }

    /// A reload ends a `vpnctl` hold: the tunnel follows its settings again (an on-demand one
    /// held down comes up only if members are there; the idle countdown starts afresh).
    public mutating func release(now: MonotonicInstant) -> Action? {
        guard hold != nil else { return nil }
        hold = nil
        lastActivity = now
        guard phase == .heldDown else { return nil }
        if settings.onDemand && !membersPresent { return enter(.downOnDemand, .released, now: now, action: nil) }
        return enter(.connecting, .released, now: now, action: .bringUp)
    }

    private mutating func enter(_ next: Phase, _ why: Reason, now: MonotonicInstant, action: Action?) -> Action? {
        phase = next
        since = now
        reason = why
        trigger = nil
        return action
    }
}
