import Addresses
import Monotonic
import Synchronization

/// The WireGuard protocol for one interface: configuration, cryptokey routing, handshakes,
/// sessions, timers and counters. Pure: time and randomness come in as arguments, bytes go
/// out as results; the I/O around it (TUN, UDP, threads) is the device's. Safe to call
/// `encapsulate` and `decapsulate` from two threads while a third ticks and configures.
///
/// Its one lock is `state`, a `Mutex` that owns everything that changes (EngineState):
/// each entry point takes it once with `withLock`, and does its cryptography before or
/// after. The files, as wireguard-go splits its device: this one (configuration, status,
/// counters), Engine+Send (TUN -> network), Engine+Receive (network -> TUN),
/// Engine+Handshakes, Engine+Timers, Engine+Reconnect; the state's steps in EngineState*;
/// Peer, Keypair, IndexTable, IPHeader.
public final class Engine: @unchecked Sendable {
    public enum Outbound: Sendable {
        /// The datagram is ready in the caller's buffer at this range.
        case send(Range<Int>, to: Endpoint)
        /// No session yet: the packet waits for the handshake; send these now.
        case queued(handshake: [Datagram])
        case drop(DropReason)
    }

    public enum Inbound: Sendable {
        /// A decrypted IP packet in the caller's buffer at this range, for the TUN.
        case deliver(Range<Int>)
        case keepalive
        /// Handshake answers, cookie replies: send these.
        case control([Datagram])
        case drop(DropReason)
    }

    let state: Mutex<EngineState>
    let timing: Timing
    /// The tunnel interface's MTU: padding never takes a packet past it. It follows the
    /// interface, whose MTU an administrator (or wg-quick) may change at any time.
    private let currentMTU: Atomic<Int>
    public var mtu: Int { currentMTU.load(ordering: .relaxed) }

    public init(configuration: InterfaceConfiguration, timing: Timing = .standard, mtu: Int = 1420,
                random: any RandomSource = SystemRandom(), reconnect: ReconnectPolicy? = nil) {
        _ = Sodium.ready
        self.timing = timing
        currentMTU = Atomic(mtu)
        state = Mutex(EngineState(configuration: configuration, timing: timing, random: random, reconnect: reconnect))
    }

    // MARK: configuration

    public func setPrivateKey(_ key: PrivateKey?) { state.withLock { $0.setPrivateKey(key) } }
    public func setListenPort(_ port: UInt16?) { state.withLock { $0.listenPort = port } }
    public func setFwmark(_ mark: UInt32?) { state.withLock { $0.fwmark = mark } }
    public func setMTU(_ mtu: Int) { currentMTU.store(mtu, ordering: .relaxed) }

    /// Adds or changes a peer; its AllowedIPs are the configuration's (replacing or added to
    /// the old ones), then `changes` in order, all under one lock: no packet sees half of it.
    public func upsertPeer(_ configuration: PeerConfiguration, replaceAllowedIPs: Bool, then changes: [AllowedIPChange] = []) {
        state.withLock { s in
            guard let id = s.upsert(configuration, replaceAllowedIPs: replaceAllowedIPs) else { return }
            for change in changes {
                switch change {
                case let .add(prefix): s.routes.insert(prefix, peer: id)
                case let .remove(prefix): s.routes.remove(prefix, peer: id)
                }
            }
        }
    }

    public func removePeer(_ key: PublicKey) { state.withLock { $0.removePeer(key) } }

    public func removeAllPeers() {
        state.withLock { s in for key in Array(s.peerByKey.keys) { s.removePeer(key) } }
    }

    public var status: EngineStatus {
        state.withLock { s in
            EngineStatus(privateKey: s.privateKey, publicKey: s.publicKey, listenPort: s.listenPort, fwmark: s.fwmark,
                         peers: s.peers.values.sorted { $0.id < $1.id }.map { p in
                             PeerStatus(publicKey: p.configuration.publicKey, presharedKey: p.configuration.presharedKey,
                                        endpoint: p.configuration.endpoint, allowedIPs: s.routes.prefixes(of: p.id),
                                        persistentKeepalive: p.configuration.persistentKeepalive, lastHandshake: p.lastHandshake, lastHandshakeAt: p.lastHandshakeAt,
                                        rxBytes: p.rxBytes, txBytes: p.txBytes)
                         }, drops: s.drops)
        }
    }

    // MARK: counters

    /// Counts a packet the I/O around the engine dropped before it got here.
    public func countDrop(_ reason: DropReason) { _ = count(reason) }

    @discardableResult
    func count(_ reason: DropReason) -> DropReason {
        state.withLock { $0.count(reason) }
    }
}

extension MonotonicInstant.Duration {
    func minus(_ other: MonotonicInstant.Duration) -> MonotonicInstant.Duration {
        MonotonicInstant.Duration(nanoseconds: nanoseconds > other.nanoseconds ? nanoseconds - other.nanoseconds : 0)
    }
}
