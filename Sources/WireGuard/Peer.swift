import Monotonic

/// Per-peer protocol state. Its fields are reached only through the engine's `Mutex`
/// (EngineState), which is what makes it safe to hand between the engine's threads.
final class Peer: @unchecked Sendable {
    let id: Int
    var configuration: PeerConfiguration
    var psk: [UInt8]
    var staticShared: [UInt8]?
    var cookies: CookieGenerator
    var pending: PendingInitiation?
    var current: Keypair?
    var previous: Keypair?
    var next: Keypair?
    var lastTimestamp: [UInt8]?
    var lastInitiationConsumed: MonotonicInstant?
    var lastHandshake: WallClock?
    /// The same on the monotonic clock, for decisions (the server choice): the wall clock steps.
    var lastHandshakeAt: MonotonicInstant?
    var lastInitiationSent: MonotonicInstant?
    var rxBytes: UInt64 = 0
    var txBytes: UInt64 = 0
    var staged: [[UInt8]] = []
    var timers = PeerTimers()
    var rekeyRequestedOnReceive = false
    var reconnect: ReconnectSchedule

    init(id: Int, configuration: PeerConfiguration, timing: Timing, reconnect: ReconnectPolicy) {
        self.id = id
        self.reconnect = ReconnectSchedule(policy: reconnect, floor: timing.rekeyTimeout)
        self.configuration = configuration
        psk = configuration.presharedKey.map { k in k.secret.withUnsafeBytes { Array($0) } } ?? [UInt8](repeating: 0, count: 32)
        cookies = CookieGenerator(remote: configuration.publicKey, lifetime: timing.cookieRefreshTime)
    }

    deinit { Zero.wipe(&psk); if staticShared != nil { Zero.wipe(&staticShared!) } }

    var keypairs: [Keypair] { [current, previous, next].compactMap { $0 } }
}

/// The timer deadlines of one peer (wireguard-go's five timers), advanced by events and
/// fired by `Engine.tick`.
struct PeerTimers {
    var retransmitHandshake: MonotonicInstant?
    var sendKeepalive: MonotonicInstant?
    var newHandshake: MonotonicInstant?
    var zeroKeyMaterial: MonotonicInstant?
    var persistentKeepalive: MonotonicInstant?
    var handshakeAttempts: UInt64 = 0
    var needAnotherKeepalive = false
}
