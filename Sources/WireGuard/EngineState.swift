import Addresses

/// Everything of an engine that changes, owned by the engine's `Mutex`: the only way to it
/// is `Engine.state.withLock`, so no field is read or written without the lock, and no
/// early return can leave the lock held. The peers' and keypairs' mutable fields are part
/// of it (they are reached only through it); a keypair's keys and send counter are not
/// (immutable, or atomic), so encryption and decryption run after the lock.
///
/// Its methods are the protocol's steps with the lock held, spread like wireguard-go's
/// device: configuration here, EngineState+Send, +Receive, +Handshakes, +Timers,
/// +Reconnect.
struct EngineState {
    let timing: Timing
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

    init(configuration: InterfaceConfiguration, timing: Timing, random: any RandomSource, reconnect: ReconnectPolicy?) {
        self.timing = timing
        self.random = random
        reconnectPolicy = reconnect ?? .protocolDefault(timing)
        listenPort = configuration.listenPort
        fwmark = configuration.fwmark
        setPrivateKey(configuration.privateKey)
        for peer in configuration.peers { upsert(peer, replaceAllowedIPs: true) }
    }

    mutating func setPrivateKey(_ key: PrivateKey?) {
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
    mutating func upsert(_ configuration: PeerConfiguration, replaceAllowedIPs: Bool) -> Int? {
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

    mutating func removePeer(_ key: PublicKey) {
        guard let id = peerByKey.removeValue(forKey: key), let peer = peers.removeValue(forKey: id) else { return }
        routes.removeAll(peer: id)
        forgetSessions(peer)
        peer.staged = []
    }

    mutating func forgetSessions(_ peer: Peer) {
        for k in peer.keypairs { indices[k.localIndex] = nil }
        if let p = peer.pending { indices[p.senderIndex] = nil }
        peer.current = nil
        peer.previous = nil
        peer.next = nil
        peer.pending = nil
    }

    @discardableResult
    mutating func count(_ reason: DropReason) -> DropReason {
        drops[reason, default: 0] += 1
        return reason
    }

    /// Everything in `output`, which is left empty.
    mutating func drainOutput() -> [Datagram] {
        let out = output
        output = []
        return out
    }

    /// What went into `output` since `before`, taken out of it.
    mutating func takeOutput(since before: Int) -> [Datagram] {
        let sent = Array(output[before...])
        output.removeSubrange(before...)
        return sent
    }
}

/// A view of the caller's buffer handed to a locked step: the caller's call, and so the
/// memory, outlives the lock.
struct BorrowedBytes: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer
}
