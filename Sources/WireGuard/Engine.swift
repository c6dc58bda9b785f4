import Addresses
import Glibc
import Synchronization

/// One session's transport keys. The send counter is reserved atomically so encryption
/// runs outside the engine's lock; the receive window is guarded by the lock.
final class Keypair: @unchecked Sendable {
    let sendKey: SecretBytes
    let receiveKey: SecretBytes
    let localIndex: UInt32
    let remoteIndex: UInt32
    let createdAt: Timestamp
    let isInitiator: Bool
    let sendCounter = Atomic<UInt64>(0)
    var replay = ReplayWindow()
    unowned let peer: Peer

    init(send: [UInt8], receive: [UInt8], localIndex: UInt32, remoteIndex: UInt32, createdAt: Timestamp, isInitiator: Bool, peer: Peer) {
        sendKey = SecretBytes(send)
        receiveKey = SecretBytes(receive)
        self.localIndex = localIndex
        self.remoteIndex = remoteIndex
        self.createdAt = createdAt
        self.isInitiator = isInitiator
        self.peer = peer
    }
}

/// Per-peer protocol state. All fields are guarded by the engine's lock.
final class Peer {
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
    var lastInitiationConsumed: Timestamp?
    var lastHandshake: WallClock?
    var lastInitiationSent: Timestamp?
    var rxBytes: UInt64 = 0
    var txBytes: UInt64 = 0
    var staged: [[UInt8]] = []
    var timers = PeerTimers()
    var rekeyRequestedOnReceive = false

    init(id: Int, configuration: PeerConfiguration, timing: Timing) {
        self.id = id
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
    var retransmitHandshake: Timestamp?
    var sendKeepalive: Timestamp?
    var newHandshake: Timestamp?
    var zeroKeyMaterial: Timestamp?
    var persistentKeepalive: Timestamp?
    var handshakeAttempts: UInt64 = 0
    var needAnotherKeepalive = false
}

/// The WireGuard protocol for one interface: configuration, cryptokey routing, handshakes,
/// sessions, timers and counters. Pure: time and randomness come in as arguments, bytes go
/// out as results; the I/O around it (TUN, UDP, threads) is the device's. Safe to call
/// `encapsulate` and `decapsulate` from two threads while a third ticks and configures.
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

    private let lock = NSLockLike()
    private let timing: Timing
    /// The tunnel interface's MTU: padding never takes a packet past it. It follows the
    /// interface, whose MTU an administrator (or wg-quick) may change at any time.
    private let currentMTU: Atomic<Int>
    public var mtu: Int { currentMTU.load(ordering: .relaxed) }
    private let random: any RandomSource
    private var privateKey: PrivateKey?
    private var publicKey: PublicKey?
    private var listenPort: UInt16?
    private var fwmark: UInt32?
    private var checker: CookieChecker?
    private var peers: [Int: Peer] = [:]
    private var peerByKey: [PublicKey: Int] = [:]
    private var nextPeerID = 0
    private var routes = AllowedIPs()
    /// Local index -> the keypair, or the peer whose initiation carries that index.
    private var indices: [UInt32: IndexEntry] = [:]
    private var output: [Datagram] = []
    private var drops: [DropReason: UInt64] = [:]
    private var limiter = HandshakeRateLimiter()

    private enum IndexEntry {
        case handshake(Peer)
        case keypair(Keypair)
    }

    public init(configuration: InterfaceConfiguration, timing: Timing = .standard, mtu: Int = 1420,
                random: any RandomSource = SystemRandom()) {
        _ = Sodium.ready
        self.timing = timing
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
            peer = Peer(id: nextPeerID, configuration: configuration, timing: timing)
            nextPeerID += 1
            peers[peer.id] = peer
            peerByKey[configuration.publicKey] = peer.id
            peer.staticShared = privateKey.flatMap { X25519.sharedSecret($0, configuration.publicKey) }
        }
        if replaceAllowedIPs { routes.removeAll(peer: peer.id) }
        for prefix in configuration.allowedIPs { routes.insert(prefix, peer: peer.id) }
        return peer.id
    }

    private func forgetSessions(_ peer: Peer) {
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

    // MARK: TUN -> network

    /// Encrypts the IP packet at `buffer[packet]` in place into a transport message that
    /// starts 16 bytes before it. Steady state: one lock, no allocation.
    public func encapsulate(buffer: UnsafeMutableRawBufferPointer, packet: Range<Int>, now: Timestamp, wall: WallClock) -> Outbound {
        var pending: PendingSeal?
        let result = encapsulate(buffer: buffer, packet: packet, now: now, wall: wall, deferring: &pending)
        pending?.seal()
        return result
    }

    /// The same, but the encryption is left to the caller, who may run it on another
    /// thread: on `.send`, `seal` holds it, and the datagram is ready once it is done.
    /// Datagrams go out in the order of these calls (their counters are in that order).
    public func encapsulate(buffer: UnsafeMutableRawBufferPointer, packet: Range<Int>, now: Timestamp, wall: WallClock,
                            deferring seal: inout PendingSeal?) -> Outbound {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[packet])
        guard let destination = IPHeader.destination(bytes) else { return .drop(count(.malformed)) }
        lock.lock()
        guard let id = routes.lookup(destination), let peer = peers[id] else {
            drops[.noRoute, default: 0] += 1
            lock.unlock()
            return .drop(.noRoute)
        }
        guard let keypair = peer.current, let endpoint = peer.configuration.endpoint,
              now.since(keypair.createdAt) < timing.rejectAfterTime else {
            let result = stage(Array(bytes), peer: peer, now: now, wall: wall)
            lock.unlock()
            return result
        }
        let counter = keypair.sendCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        guard counter < timing.rejectAfterMessages else {
            let result = stage(Array(bytes), peer: peer, now: now, wall: wall)
            lock.unlock()
            return result
        }
        let padded = min(Self.paddedLength(packet.count, mtu: mtu), buffer.count - packet.lowerBound - AEAD.tagSize)
        peer.txBytes &+= UInt64(padded + 32)
        dataSent(peer, now: now)
        if keypair.isInitiator && (counter >= timing.rekeyAfterMessages || now.since(keypair.createdAt) >= timing.rekeyAfterTime) {
            initiate(peer, now: now, wall: wall, retry: false)
        }
        lock.unlock()
        seal = prepareTransport(buffer: buffer, payloadStart: packet.lowerBound, length: packet.count, padded: padded, keypair: keypair, counter: counter)
        return .send((packet.lowerBound - MessageSize.transportHeader)..<(packet.lowerBound + padded + AEAD.tagSize), to: endpoint)
    }

    @inline(__always)
    /// Plaintext is padded to a multiple of 16, but (as wireguard-go and the kernel do) never
    /// past the MTU, so a full-sized packet keeps the outer datagram within the path MTU.
    static func paddedLength(_ length: Int, mtu: Int) -> Int {
        max(length, min((length + 15) & ~15, mtu))
    }

    /// Pads the payload and writes the header; the encryption is returned, to run anywhere.
    @inline(__always)
    private func prepareTransport(buffer: UnsafeMutableRawBufferPointer, payloadStart: Int, length: Int, padded: Int,
                                  keypair: Keypair, counter: UInt64) -> PendingSeal {
        let base = buffer.baseAddress!
        if padded > length { (base + payloadStart + length).initializeMemory(as: UInt8.self, repeating: 0, count: padded - length) }
        let header = base + payloadStart - MessageSize.transportHeader
        header.storeBytes(of: UInt32(MessageType.transport.rawValue).littleEndian, as: UInt32.self)
        (header + 4).storeBytes(of: keypair.remoteIndex.littleEndian, toByteOffset: 0, as: UInt32.self)
        (header + 8).storeBytes(of: counter.littleEndian, toByteOffset: 0, as: UInt64.self)
        return PendingSeal(keypair: keypair, counter: counter, payload: base + payloadStart, length: padded)
    }

    private func writeTransport(buffer: UnsafeMutableRawBufferPointer, payloadStart: Int, length: Int, padded: Int, keypair: Keypair, counter: UInt64) {
        prepareTransport(buffer: buffer, payloadStart: payloadStart, length: length, padded: padded, keypair: keypair, counter: counter).seal()
    }

    /// A transport message as a fresh array (keepalives and staged packets: the cold path).
    private func transportDatagram(_ payload: [UInt8], peer: Peer, now: Timestamp) -> Datagram? {
        guard let keypair = peer.current, let endpoint = peer.configuration.endpoint,
              now.since(keypair.createdAt) < timing.rejectAfterTime else { return nil }
        let counter = keypair.sendCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        guard counter < timing.rejectAfterMessages else { return nil }
        let padded = (payload.count + 15) & ~15
        var message = [UInt8](repeating: 0, count: MessageSize.transportHeader + padded + AEAD.tagSize)
        message.replaceSubrange(MessageSize.transportHeader..<(MessageSize.transportHeader + payload.count), with: payload)
        message.withUnsafeMutableBytes {
            writeTransport(buffer: $0, payloadStart: MessageSize.transportHeader, length: payload.count, padded: padded, keypair: keypair, counter: counter)
        }
        peer.txBytes &+= UInt64(message.count)
        anyAuthenticatedPacketSent(peer, now: now)
        return Datagram(bytes: message, to: endpoint)
    }

    private func stage(_ packet: [UInt8], peer: Peer, now: Timestamp, wall: WallClock) -> Outbound {
        if peer.staged.count >= timing.stagedPackets {
            peer.staged.removeFirst()
            drops[.queueFull, default: 0] += 1
        }
        peer.staged.append(packet)
        guard peer.configuration.endpoint != nil else { return .queued(handshake: []) }
        let before = output.count
        initiate(peer, now: now, wall: wall, retry: false)
        let sent = Array(output[before...])
        output.removeSubrange(before...)
        return .queued(handshake: sent)
    }

    // MARK: handshakes

    /// Queues an initiation for `peer` unless one went out less than REKEY_TIMEOUT ago.
    private func initiate(_ peer: Peer, now: Timestamp, wall: WallClock, retry: Bool) {
        guard let privateKey, let publicKey, let staticShared = peer.staticShared, let endpoint = peer.configuration.endpoint else { return }
        if !retry, let last = peer.lastInitiationSent, now.since(last) < timing.rekeyTimeout { return }
        if let old = peer.pending { indices[old.senderIndex] = nil }
        let index = freshIndex()
        guard let (initiation, pending) = HandshakeCodec.createInitiation(
            local: privateKey, localPublic: publicKey, remote: peer.configuration.publicKey, staticShared: staticShared,
            ephemeral: PrivateKey(secret: SecretBytes { random.fill($0) }), senderIndex: index,
            timestamp: TAI64N.encode(wall), now: now) else { return }
        var message = initiation
        peer.cookies.addMACs(&message, now: now)
        peer.pending = pending
        indices[index] = .handshake(peer)
        peer.lastInitiationSent = now
        anyAuthenticatedPacketSent(peer, now: now)
        peer.timers.retransmitHandshake = now + timing.rekeyTimeout + jitter()
        output.append(Datagram(bytes: message, to: endpoint))
    }

    private func freshIndex() -> UInt32 {
        while true {
            let candidate = random.uint32()
            if indices[candidate] == nil { return candidate }
        }
    }

    private func jitter() -> Timestamp.Duration { .milliseconds(UInt64(random.uint32() % 334)) }

    // MARK: network -> TUN

    public func decapsulate(buffer: UnsafeMutableRawBufferPointer, datagram: Range<Int>, from source: Endpoint,
                            underLoad: Bool, now: Timestamp, wall: WallClock) -> Inbound {
        switch beginDecapsulating(buffer: buffer, datagram: datagram, from: source, underLoad: underLoad, now: now, wall: wall) {
        case let .done(result):
            return result
        case var .open(pending):
            pending.open(in: buffer)
            return finishDecapsulating(pending, buffer: buffer, now: now, wall: wall)
        }
    }

    public enum InboundStep {
        /// A transport message of a known session: decrypt it (`PendingOpen.open`, on any
        /// thread), then hand it to `finishDecapsulating`, in arrival order.
        case open(PendingOpen)
        /// Handled (handshakes, cookies) or dropped.
        case done(Inbound)
    }

    /// The first step of `decapsulate`, in arrival order: a transport message's session is
    /// looked up; any other message is handled whole (so a response is processed before the
    /// transport messages behind it look for its session).
    public func beginDecapsulating(buffer: UnsafeMutableRawBufferPointer, datagram: Range<Int>, from source: Endpoint,
                                   underLoad: Bool, now: Timestamp, wall: WallClock) -> InboundStep {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[datagram])
        switch WireFormat.classify(bytes) {
        case let .failure(reason):
            return .done(.drop(count(reason)))
        case .success(.transport):
            return findSession(buffer: buffer, datagram: datagram, from: source, now: now)
        case .success(.initiation):
            return .done(receiveInitiation(Array(bytes), from: source, underLoad: underLoad, now: now, wall: wall))
        case .success(.response):
            return .done(receiveResponse(Array(bytes), from: source, underLoad: underLoad, now: now, wall: wall))
        case .success(.cookieReply):
            return .done(receiveCookieReply(Array(bytes), now: now))
        }
    }

    private func findSession(buffer: UnsafeMutableRawBufferPointer, datagram: Range<Int>, from source: Endpoint, now: Timestamp) -> InboundStep {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[datagram])
        let receiver = WireFormat.readUInt32(bytes, 4)
        let counter = WireFormat.readUInt64(bytes, 8)
        lock.lock()
        defer { lock.unlock() }
        guard case let .keypair(keypair)? = indices[receiver] else { return .done(.drop(countLocked(.unknownPeer))) }
        guard now.since(keypair.createdAt) < timing.rejectAfterTime else { return .done(.drop(countLocked(.noSession))) }
        return .open(PendingOpen(keypair: keypair, counter: counter, datagram: datagram, source: source))
    }

    /// The last step, in arrival order: the replay window, the session and endpoint
    /// bookkeeping, and cryptokey routing of the decrypted packet.
    public func finishDecapsulating(_ pending: PendingOpen, buffer: UnsafeMutableRawBufferPointer, now: Timestamp, wall: WallClock) -> Inbound {
        let keypair = pending.keypair, counter = pending.counter, datagram = pending.datagram, source = pending.source
        guard pending.authentic else { return .drop(count(.badMAC)) }
        let payloadStart = datagram.lowerBound + MessageSize.transportHeader
        let sealedLength = datagram.count - MessageSize.transportHeader
        let plaintext = UnsafeRawBufferPointer(rebasing: buffer[payloadStart..<(payloadStart + sealedLength - AEAD.tagSize)])
        lock.lock()
        defer { lock.unlock() }
        guard keypair.replay.accept(counter, limit: timing.rejectAfterMessages) else {
            drops[.replay, default: 0] += 1
            return .drop(.replay)
        }
        let peer = keypair.peer
        guard peers[peer.id] === peer else {
            drops[.unknownPeer, default: 0] += 1
            return .drop(.unknownPeer)
        }
        if peer.next === keypair {
            // The initiator used the session: it is now confirmed on our side too.
            if let old = peer.previous { indices[old.localIndex] = nil }
            peer.previous = peer.current
            peer.current = keypair
            peer.next = nil
            handshakeComplete(peer, wall: wall)
            sendStaged(peer, now: now)
        }
        peer.configuration.endpoint = source
        peer.rxBytes &+= UInt64(datagram.count)
        peer.timers.newHandshake = nil
        authenticatedTraversal(peer, now: now)
        if keypair.isInitiator, !peer.rekeyRequestedOnReceive, peer.current === keypair,
           now.since(keypair.createdAt) >= timing.rejectAfterTime.minus(timing.keepaliveTimeout).minus(timing.rekeyTimeout) {
            peer.rekeyRequestedOnReceive = true
            initiate(peer, now: now, wall: wall, retry: false)
        }
        if plaintext.isEmpty { return .keepalive }
        guard let (sourceAddress, length) = IPHeader.sourceAndLength(plaintext) else {
            drops[.malformed, default: 0] += 1
            return .drop(.malformed)
        }
        guard routes.lookup(sourceAddress) == peer.id else {
            drops[.notAllowedIP, default: 0] += 1
            return .drop(.notAllowedIP)
        }
        dataReceived(peer, now: now)
        return .deliver(payloadStart..<(payloadStart + length))
    }

    /// What every handshake message passes before any Diffie-Hellman, with the lock held:
    /// MAC1; under load, MAC2 (else a cookie reply) and its source's rate limit. nil admits it.
    private func admitLocked(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: Timestamp) -> Inbound? {
        guard var checker else { return .drop(countLocked(.unknownPeer)) }
        guard checker.checkMAC1(m) else { return .drop(countLocked(.badMAC)) }
        if underLoad && !checker.checkMAC2(m, source: source, now: now) {
            let reply = checker.reply(to: m, source: source, now: now)
            self.checker = checker
            countLocked(.rateLimited)
            return .control([Datagram(bytes: reply, to: source)])
        }
        self.checker = checker
        if underLoad && !limiter.allow(source.address, now: now) { return .drop(countLocked(.rateLimited)) }
        return nil
    }

    private func receiveInitiation(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: Timestamp, wall: WallClock) -> Inbound {
        lock.lock()
        guard let privateKey, let publicKey else {
            lock.unlock()
            return .drop(count(.unknownPeer))
        }
        if let answer = admitLocked(m, from: source, underLoad: underLoad, now: now) { lock.unlock(); return answer }
        lock.unlock()
        var unknown = false
        guard let consumed = HandshakeCodec.consumeInitiation(m, local: privateKey, localPublic: publicKey, staticShared: { key in
            let shared = self.lock.with { self.peerByKey[key].flatMap { self.peers[$0]?.staticShared } }
            unknown = shared == nil
            return shared
        }) else { return .drop(count(unknown ? .unknownPeer : .badMAC)) }
        lock.lock()
        defer { lock.unlock() }
        guard let id = peerByKey[consumed.initiatorStatic], let peer = peers[id] else {
            drops[.unknownPeer, default: 0] += 1
            return .drop(.unknownPeer)
        }
        if let last = peer.lastTimestamp, !TAI64N.isAfter(consumed.timestamp, last) {
            drops[.staleTimestamp, default: 0] += 1
            return .drop(.staleTimestamp)
        }
        if let last = peer.lastInitiationConsumed, now.since(last) < timing.initiationInterval {
            drops[.rateLimited, default: 0] += 1
            return .drop(.rateLimited)
        }
        let index = freshIndex()
        guard var (response, send, receive) = HandshakeCodec.createResponse(
            consumed, ephemeral: PrivateKey(secret: SecretBytes { random.fill($0) }), initiatorStatic: consumed.initiatorStatic,
            psk: peer.psk, senderIndex: index) else { return .drop(countLocked(.badMAC)) }
        peer.lastTimestamp = consumed.timestamp
        peer.lastInitiationConsumed = now
        peer.cookies.addMACs(&response, now: now)
        let keypair = Keypair(send: send, receive: receive, localIndex: index, remoteIndex: consumed.initiatorIndex,
                              createdAt: now, isInitiator: false, peer: peer)
        Zero.wipe(&send)
        Zero.wipe(&receive)
        if let old = peer.next { indices[old.localIndex] = nil }
        peer.next = keypair
        indices[index] = .keypair(keypair)
        peer.configuration.endpoint = source
        peer.timers.zeroKeyMaterial = now + timing.rejectAfterTime * 3
        anyAuthenticatedPacketSent(peer, now: now)
        authenticatedTraversal(peer, now: now)
        return .control([Datagram(bytes: response, to: source)])
    }

    private func receiveResponse(_ m: [UInt8], from source: Endpoint, underLoad: Bool, now: Timestamp, wall: WallClock) -> Inbound {
        lock.lock()
        guard let privateKey else { lock.unlock(); return .drop(count(.unknownPeer)) }
        if let answer = admitLocked(m, from: source, underLoad: underLoad, now: now) { lock.unlock(); return answer }
        let receiver = m.withUnsafeBytes { WireFormat.readUInt32($0, 8) }
        guard case let .handshake(peer)? = indices[receiver], let pending = peer.pending, pending.senderIndex == receiver else {
            drops[.unknownPeer, default: 0] += 1
            lock.unlock()
            return .drop(.unknownPeer)
        }
        let psk = peer.psk
        lock.unlock()
        guard var keys = HandshakeCodec.consumeResponse(m, pending: pending, local: privateKey, psk: psk) else {
            return .drop(count(.badMAC))
        }
        lock.lock()
        defer { lock.unlock() }
        // Another thread may have completed or replaced this handshake meanwhile.
        guard peer.pending?.senderIndex == receiver, peers[peer.id] === peer else { return .drop(countLocked(.unknownPeer)) }
        let remoteIndex = m.withUnsafeBytes { WireFormat.readUInt32($0, 4) }
        let keypair = Keypair(send: keys.send, receive: keys.receive, localIndex: receiver, remoteIndex: remoteIndex,
                              createdAt: now, isInitiator: true, peer: peer)
        Zero.wipe(&keys.send)
        Zero.wipe(&keys.receive)
        peer.pending = nil
        if let old = peer.previous { indices[old.localIndex] = nil }
        if let old = peer.next { indices[old.localIndex] = nil; peer.next = nil }
        peer.previous = peer.current
        peer.current = keypair
        indices[receiver] = .keypair(keypair)
        peer.configuration.endpoint = source
        peer.rekeyRequestedOnReceive = false
        handshakeComplete(peer, wall: wall)
        peer.timers.zeroKeyMaterial = now + timing.rejectAfterTime * 3
        peer.timers.newHandshake = nil
        authenticatedTraversal(peer, now: now)
        let before = output.count
        sendStaged(peer, now: now)
        if output.count == before, let keepalive = transportDatagram([], peer: peer, now: now) {
            // Confirms the session to the responder, which waits for a first packet.
            output.append(keepalive)
        }
        let sent = Array(output[before...])
        output.removeSubrange(before...)
        return .control(sent)
    }

    private func receiveCookieReply(_ m: [UInt8], now: Timestamp) -> Inbound {
        lock.lock()
        defer { lock.unlock() }
        let receiver = m.withUnsafeBytes { WireFormat.readUInt32($0, 4) }
        let peer: Peer
        switch indices[receiver] {
        case let .handshake(p)?: peer = p
        case let .keypair(k)?: peer = k.peer
        case nil:
            drops[.unknownPeer, default: 0] += 1
            return .drop(.unknownPeer)
        }
        guard peer.cookies.consume(reply: m, now: now) else {
            drops[.badMAC, default: 0] += 1
            return .drop(.badMAC)
        }
        return .control([])
    }

    private func sendStaged(_ peer: Peer, now: Timestamp) {
        let staged = peer.staged
        peer.staged = []
        for packet in staged {
            if let d = transportDatagram(packet, peer: peer, now: now) { output.append(d) }
        }
        // A staged keepalive (empty) is not data: nothing must answer it.
        if staged.contains(where: { !$0.isEmpty }) { dataSent(peer, now: now) }
    }

    /// A keepalive to the peer now, as wireguard-go and the kernel send one when persistent
    /// keepalive is switched on (so a peer behind NAT is reachable before it sends anything):
    /// over the current session, or once the handshake it starts completes. The datagrams
    /// come out of `drainOutput`.
    public func keepalive(_ key: PublicKey, now: Timestamp, wall: WallClock) {
        lock.with {
            guard let id = peerByKey[key], let peer = peers[id] else { return }
            if let datagram = transportDatagram([], peer: peer, now: now) {
                output.append(datagram)
            } else if case let .queued(handshake) = stage([], peer: peer, now: now, wall: wall) {
                output += handshake
            }
        }
    }

    /// Datagrams that became sendable as a side effect (staged packets after a handshake,
    /// rekeys triggered by traffic): the device sends them after each batch.
    public func drainOutput() -> [Datagram] {
        lock.with {
            let out = output
            output = []
            return out
        }
    }

    // MARK: timers

    private func dataSent(_ peer: Peer, now: Timestamp) {
        anyAuthenticatedPacketSent(peer, now: now)
        authenticatedTraversal(peer, now: now)
        if peer.timers.newHandshake == nil {
            peer.timers.newHandshake = now + timing.keepaliveTimeout + timing.rekeyTimeout + jitter()
        }
    }

    private func dataReceived(_ peer: Peer, now: Timestamp) {
        if peer.timers.sendKeepalive == nil {
            peer.timers.sendKeepalive = now + timing.keepaliveTimeout
        } else {
            peer.timers.needAnotherKeepalive = true
        }
    }

    private func anyAuthenticatedPacketSent(_ peer: Peer, now: Timestamp) {
        peer.timers.sendKeepalive = nil
    }

    private func authenticatedTraversal(_ peer: Peer, now: Timestamp) {
        if let seconds = peer.configuration.persistentKeepalive, seconds > 0 {
            peer.timers.persistentKeepalive = now + .seconds(Double(seconds))
        }
    }

    private func handshakeComplete(_ peer: Peer, wall: WallClock) {
        peer.timers.retransmitHandshake = nil
        peer.timers.handshakeAttempts = 0
        peer.lastHandshake = wall
    }

    /// Fires due timers: handshake retries, keepalives, rekeys, key expiry. Call it every
    /// ~100 ms; returns what to send.
    public func tick(now: Timestamp, wall: WallClock) -> [Datagram] {
        lock.with {
            for peer in peers.values {
                fireTimers(peer, now: now, wall: wall)
            }
            let out = output
            output = []
            return out
        }
    }

    private func fireTimers(_ peer: Peer, now: Timestamp, wall: WallClock) {
        if let due = peer.timers.retransmitHandshake, due <= now {
            peer.timers.retransmitHandshake = nil
            if peer.timers.handshakeAttempts >= timing.maxHandshakeAttempts {
                // Give up until there is traffic again; stale staged packets go.
                peer.timers.sendKeepalive = nil
                peer.staged = []
                if let p = peer.pending { indices[p.senderIndex] = nil; peer.pending = nil }
                if peer.timers.zeroKeyMaterial == nil { peer.timers.zeroKeyMaterial = now + timing.rejectAfterTime * 3 }
            } else {
                peer.timers.handshakeAttempts += 1
                initiate(peer, now: now, wall: wall, retry: true)
            }
        }
        if let due = peer.timers.sendKeepalive, due <= now {
            peer.timers.sendKeepalive = nil
            if let d = transportDatagram([], peer: peer, now: now) { output.append(d) }
            if peer.timers.needAnotherKeepalive {
                peer.timers.needAnotherKeepalive = false
                peer.timers.sendKeepalive = now + timing.keepaliveTimeout
            }
        }
        if let due = peer.timers.newHandshake, due <= now {
            // We sent data and heard nothing back for KEEPALIVE + REKEY_TIMEOUT.
            peer.timers.newHandshake = nil
            initiate(peer, now: now, wall: wall, retry: false)
        }
        if let due = peer.timers.persistentKeepalive, due <= now {
            peer.timers.persistentKeepalive = nil
            if let d = transportDatagram([], peer: peer, now: now) {
                output.append(d)
                authenticatedTraversal(peer, now: now)
            } else if peer.configuration.endpoint != nil {
                initiate(peer, now: now, wall: wall, retry: false)
            }
        }
        if let due = peer.timers.zeroKeyMaterial, due <= now {
            peer.timers.zeroKeyMaterial = nil
            forgetSessions(peer)
        }
        // Sessions past REJECT_AFTER_TIME are useless: drop their indices and keys.
        for keypair in peer.keypairs where now.since(keypair.createdAt) >= timing.rejectAfterTime {
            indices[keypair.localIndex] = nil
            if peer.current === keypair { peer.current = nil }
            if peer.previous === keypair { peer.previous = nil }
            if peer.next === keypair { peer.next = nil }
        }
    }

    /// Counts a packet the I/O around the engine dropped before it got here.
    public func countDrop(_ reason: DropReason) { _ = count(reason) }

    @discardableResult
    private func count(_ reason: DropReason) -> DropReason {
        lock.with { countLocked(reason) }
    }

    /// The same with the lock already held.
    @discardableResult
    private func countLocked(_ reason: DropReason) -> DropReason {
        drops[reason, default: 0] += 1
        return reason
    }
}

extension Timestamp.Duration {
    func minus(_ other: Timestamp.Duration) -> Timestamp.Duration {
        Timestamp.Duration(nanoseconds: nanoseconds > other.nanoseconds ? nanoseconds - other.nanoseconds : 0)
    }
}

/// The IP header fields the engine needs, read from raw bytes with bounds checks.
enum IPHeader {
    /// Destination address bytes (4 or 16) of an IPv4 or IPv6 packet.
    @inline(__always)
    static func destination(_ p: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard !p.isEmpty else { return nil }
        switch p[0] >> 4 {
        case 4: return p.count >= 20 ? UnsafeRawBufferPointer(rebasing: p[16..<20]) : nil
        case 6: return p.count >= 40 ? UnsafeRawBufferPointer(rebasing: p[24..<40]) : nil
        default: return nil
        }
    }

    /// Source address bytes and the packet's own length (padding stripped), checked
    /// against what was received.
    @inline(__always)
    static func sourceAndLength(_ p: UnsafeRawBufferPointer) -> (UnsafeRawBufferPointer, Int)? {
        guard !p.isEmpty else { return nil }
        switch p[0] >> 4 {
        case 4:
            guard p.count >= 20 else { return nil }
            let length = Int(p[2]) << 8 | Int(p[3])
            guard length >= 20, length <= p.count else { return nil }
            return (UnsafeRawBufferPointer(rebasing: p[12..<16]), length)
        case 6:
            guard p.count >= 40 else { return nil }
            let length = 40 + (Int(p[4]) << 8 | Int(p[5]))
            guard length <= p.count else { return nil }
            return (UnsafeRawBufferPointer(rebasing: p[8..<24]), length)
        default:
            return nil
        }
    }
}

/// A plain pthread mutex: lock and unlock on separate lines where the data path needs to
/// release it before the cryptography.
final class NSLockLike: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }

    @inline(__always)
    func with<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
