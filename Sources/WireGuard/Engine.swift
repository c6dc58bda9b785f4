import Addresses
import Synchronization

/// The WireGuard protocol for one interface: configuration, cryptokey routing, handshakes,
/// sessions, timers and counters. Pure: time and randomness come in as arguments, bytes go
/// out as results; the I/O around it (TUN, UDP, threads) is the device's. Safe to call
/// `encapsulate` and `decapsulate` from two threads while a third ticks and configures.
///
/// The files, as wireguard-go splits its device: this one holds the state and its
/// configuration; Engine+Send (TUN -> network), Engine+Receive (network -> TUN),
/// Engine+Handshakes, Engine+Timers; Peer, Keypair, IndexTable, IPHeader. The lock
/// (`EngineLock`) is the one owner of every `var` below and of the peers' and keypairs'
/// mutable fields: public entry points take it in one `lock.with` closure; a method whose
/// name ends in `Locked`, and every private helper called from inside such a closure,
/// runs with it held and never takes it again.
public final class Engine: @unchecked Sendable {
    public enum Outbound {
        /// The datagram is ready in the caller's buffer at this range.
        case send(Range<Int>, to: Endpoint)
        /// No session yet: the packet waits for the handshake; send these now.
        case queued(handshake: [Datagram])
        case drop(DropReason)
    }

    public enum Inbound {
        /// A decrypted IP packet in the caller's buffer at this range, for the TUN.
        case deliver(Range<Int>)
        case keepalive
        /// Handshake answers, cookie replies: send these.
        case control([Datagram])
        case drop(DropReason)
    }

    let lock = EngineLock()
    let timing: Timing
    /// The tunnel interface's MTU: padding never takes a packet past it. It follows the
    /// interface, whose MTU an administrator (or wg-quick) may change at any time.
    private let currentMTU: Atomic<Int>
    public var mtu: Int { currentMTU.load(ordering: .relaxed) }
    let random: any RandomSource
    var privateKey: PrivateKey?
    var publicKey: PublicKey?
    var listenPort: UInt16?
    var fwmark: UInt32?
    var checker: CookieChecker?
    var peers: [Int: Peer] = [:]
    var peerByKey: [PublicKey: Int] = [:]
    var nextPeerID = 0
    var routes = AllowedIPs()
    var indices = IndexTable()
    /// Datagrams produced as side effects, drained by `drainOutput` and `tick`.
    var output: [Datagram] = []
    var drops: [DropReason: UInt64] = [:]
    var limiter = HandshakeRateLimiter()
    /// How handshake retries are spaced (WireGuard's own unless a `reconnect` policy says).
    var reconnectPolicy: ReconnectPolicy

    public init(configuration: InterfaceConfiguration, timing: Timing = .standard, mtu: Int = 1420,
                random: any RandomSource = SystemRandom(), reconnect: ReconnectPolicy? = nil) {
        _ = Sodium.ready
        self.timing = timing
        reconnectPolicy = reconnect ?? .protocolDefault(timing)
        currentMTU = Atomic(mtu)
        self.random = random
        listenPort = configuration.listenPort
        fwmark = configuration.fwmark
        setPrivateKeyLocked(configuration.privateKey)
        for peer in configuration.peers { upsertLocked(peer, replaceAllowedIPs: true) }
    }

    // MARK: configuration

    public func setPrivateKey(_ key: PrivateKey?) { lock.with { setPrivateKeyLocked(key) } }
    public func setListenPort(_ port: UInt16?) { lock.with { listenPort = port } }
    public func setFwmark(_ mark: UInt32?) { lock.with { fwmark = mark } }
    public func setMTU(_ mtu: Int) { currentMTU.store(mtu, ordering: .relaxed) }

    /// Adds or changes a peer; its AllowedIPs are the configuration's (replacing or added to
    /// the old ones), then `changes` in order, all under one lock: no packet sees half of it.
    public func upsertPeer(_ configuration: PeerConfiguration, replaceAllowedIPs: Bool, then changes: [AllowedIPChange] = []) {
        lock.with {
            guard let id = upsertLocked(configuration, replaceAllowedIPs: replaceAllowedIPs) else { return }
            for change in changes {
                switch change {
                case let .add(prefix): routes.insert(prefix, peer: id)
                case let .remove(prefix): routes.remove(prefix, peer: id)
                }
            }
        }
    }

    public func removePeer(_ key: PublicKey) {
        lock.with {
            guard let id = peerByKey.removeValue(forKey: key), let peer = peers.removeValue(forKey: id) else { return }
            routes.removeAll(peer: id)
            forget(peer)
        }
    }

    public func removeAllPeers() {
        lock.with { for key in Array(peerByKey.keys) { if let id = peerByKey.removeValue(forKey: key), let p = peers.removeValue(forKey: id) { routes.removeAll(peer: id); forget(p) } } }
    }

    public var status: EngineStatus {
        lock.with {
            EngineStatus(privateKey: privateKey, publicKey: publicKey, listenPort: listenPort, fwmark: fwmark,
                         peers: peers.values.sorted { $0.id < $1.id }.map { p in
                             PeerStatus(publicKey: p.configuration.publicKey, presharedKey: p.configuration.presharedKey,
                                        endpoint: p.configuration.endpoint, allowedIPs: routes.prefixes(of: p.id),
                                        persistentKeepalive: p.configuration.persistentKeepalive, lastHandshake: p.lastHandshake,
                                        rxBytes: p.rxBytes, txBytes: p.txBytes)
                         }, drops: drops)
        }
    }

    private func setPrivateKeyLocked(_ key: PrivateKey?) {
        privateKey = key
        publicKey = key?.publicKey
        checker = publicKey.map { CookieChecker(localPublic: $0, random: random, lifetime: timing.cookieRefreshTime) }
        for peer in peers.values {
            peer.staticShared = key.flatMap { X25519.sharedSecret($0, peer.configuration.publicKey) }
            forgetSessions(peer)
        }
    }

    /// The peer's id; nil for a peer with the interface's own key, which is ignored (as
    /// wireguard-go does).
    @discardableResult
    private func upsertLocked(_ configuration: PeerConfiguration, replaceAllowedIPs: Bool) -> Int? {
        let peer: Peer
        if let id = peerByKey[configuration.publicKey], let existing = peers[id] {
            peer = existing
            let pskChanged = configuration.presharedKey?.hex != existing.configuration.presharedKey?.hex
            existing.configuration = configuration
            if pskChanged {
                existing.psk = configuration.presharedKey.map { k in k.secret.withUnsafeBytes { Array($0) } } ?? [UInt8](repeating: 0, count: 32)
            }
        } else {
            guard configuration.publicKey != publicKey else { return nil }
            peer = Peer(id: nextPeerID, configuration: configuration, timing: timing, reconnect: reconnectPolicy)
            nextPeerID += 1
            peers[peer.id] = peer
            peerByKey[configuration.publicKey] = peer.id
            peer.staticShared = privateKey.flatMap { X25519.sharedSecret($0, configuration.publicKey) }
        }
        if replaceAllowedIPs { routes.removeAll(peer: peer.id) }
        for prefix in configuration.allowedIPs { routes.insert(prefix, peer: peer.id) }
        return peer.id
    }

    func forgetSessions(_ peer: Peer) {
        for k in peer.keypairs { indices[k.localIndex] = nil }
        if let p = peer.pending { indices[p.senderIndex] = nil }
        peer.current = nil
        peer.previous = nil
        peer.next = nil
        peer.pending = nil
    }

    private func forget(_ peer: Peer) {
        forgetSessions(peer)
        peer.staged = []
    }

    // MARK: counters

    /// Counts a packet the I/O around the engine dropped before it got here.
    public func countDrop(_ reason: DropReason) { _ = count(reason) }

    @discardableResult
    func count(_ reason: DropReason) -> DropReason {
        lock.with { countLocked(reason) }
    }

    /// The same with the lock already held.
    @discardableResult
    func countLocked(_ reason: DropReason) -> DropReason {
        drops[reason, default: 0] += 1
        return reason
    }
}

extension Timestamp.Duration {
    func minus(_ other: Timestamp.Duration) -> Timestamp.Duration {
        Timestamp.Duration(nanoseconds: nanoseconds > other.nanoseconds ? nanoseconds - other.nanoseconds : 0)
    }
}
