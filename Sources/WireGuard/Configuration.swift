import Addresses
import Monotonic

/// The protocol's constants (WireGuard paper, section 6), gathered so tests can shorten them.
public struct Timing: Sendable {
    public var rekeyAfterMessages: UInt64 = 1 << 60
    public var rejectAfterMessages: UInt64 = UInt64.max - (1 << 13)
    public var rekeyAfterTime = MonotonicInstant.Duration.seconds(120)
    public var rejectAfterTime = MonotonicInstant.Duration.seconds(180)
    public var rekeyAttemptTime = MonotonicInstant.Duration.seconds(90)
    public var rekeyTimeout = MonotonicInstant.Duration.seconds(5)
    public var keepaliveTimeout = MonotonicInstant.Duration.seconds(10)
    public var cookieRefreshTime = MonotonicInstant.Duration.seconds(120)
    /// The fastest one peer's initiations are processed (wireguard-go: 50 per second).
    public var initiationInterval = MonotonicInstant.Duration.milliseconds(20)
    /// Packets held per peer while a handshake is under way.
    public var stagedPackets = 1024

    public static let standard = Timing()

    public init() {}

    var maxHandshakeAttempts: UInt64 { rekeyAttemptTime.nanoseconds / max(rekeyTimeout.nanoseconds, 1) }
}

public struct PeerConfiguration: Sendable {
    public var publicKey: PublicKey
    public var presharedKey: PresharedKey?
    public var endpoint: Endpoint?
    public var allowedIPs: [IPPrefix]
    /// Seconds between keepalives when idle; nil is off.
    public var persistentKeepalive: UInt16?

    public init(publicKey: PublicKey, presharedKey: PresharedKey? = nil, endpoint: Endpoint? = nil,
                allowedIPs: [IPPrefix] = [], persistentKeepalive: UInt16? = nil) {
        self.publicKey = publicKey
        self.presharedKey = presharedKey
        self.endpoint = endpoint
        self.allowedIPs = allowedIPs
        self.persistentKeepalive = persistentKeepalive
    }
}

/// One step of a change to a peer's AllowedIPs, applied in order.
public enum AllowedIPChange: Sendable, Hashable {
    case add(IPPrefix)
    /// Takes the prefix from the peer, if it is the peer's.
    case remove(IPPrefix)
}

public struct InterfaceConfiguration: Sendable {
    public var privateKey: PrivateKey?
    public var listenPort: UInt16?
    public var fwmark: UInt32?
    public var peers: [PeerConfiguration]

    public init(privateKey: PrivateKey?, listenPort: UInt16? = nil, fwmark: UInt32? = nil, peers: [PeerConfiguration] = []) {
        self.privateKey = privateKey
        self.listenPort = listenPort
        self.fwmark = fwmark
        self.peers = peers
    }
}

public struct PeerStatus: Sendable {
    public var publicKey: PublicKey
    public var presharedKey: PresharedKey?
    public var endpoint: Endpoint?
    public var allowedIPs: [IPPrefix]
    public var persistentKeepalive: UInt16?
    public var lastHandshake: WallClock?
    /// The latest handshake on the monotonic clock (what decisions compare with `now`).
    public var lastHandshakeAt: MonotonicInstant?
    public var rxBytes: UInt64
    public var txBytes: UInt64
}

public struct EngineStatus: Sendable {
    public var privateKey: PrivateKey?
    public var publicKey: PublicKey?
    public var listenPort: UInt16?
    public var fwmark: UInt32?
    public var peers: [PeerStatus]
    public var drops: [DropReason: UInt64]
}

/// A datagram to send (the cold path: handshakes, cookies, keepalives, staged packets).
public struct Datagram: Sendable {
    public var bytes: [UInt8]
    public var to: Endpoint

    public init(bytes: [UInt8], to: Endpoint) {
        self.bytes = bytes
        self.to = to
    }
}
