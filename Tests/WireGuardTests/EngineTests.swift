import Addresses
import Monotonic
import Testing
@testable import WireGuard

/// Two engines wired back to back in memory with a fake clock: every datagram one emits is
/// handed to the other, so handshakes, data, timers and drops run exactly as on the wire.
final class EnginePair {
    let aKey = PrivateKey.generate(), bKey = PrivateKey.generate()
    let aEndpoint = Endpoint(address: IPAddress("192.0.2.1")!, port: 51820)
    var bEndpoint = Endpoint(address: IPAddress("198.51.100.2")!, port: 40000)
    let a: Engine, b: Engine
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    var wall = WallClock(seconds: 1_700_000_000, nanoseconds: 0)
    /// Datagrams in flight, with their sender.
    var wire: [(from: String, datagram: Datagram)] = []
    var deliveredToA: [[UInt8]] = []
    var deliveredToB: [[UInt8]] = []
    /// Initiations that reached the other side.
    var initiationsDelivered = 0

    init(timing: Timing = .standard, psk: PresharedKey? = nil, bPSK: PresharedKey? = nil) {
        // a is the listening side (no endpoint for b); b dials a.
        a = Engine(configuration: InterfaceConfiguration(privateKey: aKey, listenPort: 51820, peers: [
            PeerConfiguration(publicKey: bKey.publicKey, presharedKey: psk, allowedIPs: [IPPrefix("10.0.0.2/32")!, IPPrefix("fd00::2/128")!]),
        ]), timing: timing)
        b = Engine(configuration: InterfaceConfiguration(privateKey: bKey, peers: [
            PeerConfiguration(publicKey: aKey.publicKey, presharedKey: bPSK ?? psk, endpoint: aEndpoint, allowedIPs: [IPPrefix("0.0.0.0/0")!, IPPrefix("::/0")!]),
        ]), timing: timing)
    }

    func advance(_ seconds: Double) {
        now = now + .seconds(seconds)
        wall.seconds += Int64(seconds.rounded(.up))
    }

    /// Sends an IP packet from `from` into its engine; what comes out goes on the wire.
    @discardableResult
    func send(_ packet: [UInt8], from side: String) -> Engine.Outbound {
        let engine = side == "a" ? a : b
        var buffer = [UInt8](repeating: 0, count: 16 + packet.count + 64)
        buffer.replaceSubrange(16..<(16 + packet.count), with: packet)
        let result = buffer.withUnsafeMutableBytes { engine.encapsulate(buffer: $0, packet: 16..<(16 + packet.count), now: now, wall: wall) }
        switch result {
        case let .send(range, to):
            wire.append((side, Datagram(bytes: Array(buffer[range]), to: to)))
        case let .queued(handshake):
            wire += handshake.map { (side, $0) }
        case .drop:
            break
        }
        return result
    }

    /// Delivers everything on the wire (and what that triggers) until it is quiet;
    /// `underLoad` is the listening side's (a's) state.
    @discardableResult
    func run(underLoad: Bool = false, limit: Int = 100) -> [Engine.Inbound] {
        var results: [Engine.Inbound] = []
        var steps = 0
        while !wire.isEmpty && steps < limit {
            steps += 1
            let (from, d) = wire.removeFirst()
            results.append(deliver(d.bytes, from: from, underLoad: underLoad && from == "b"))
        }
        return results
    }

    @discardableResult
    func deliver(_ bytes: [UInt8], from side: String, underLoad: Bool = false) -> Engine.Inbound {
        let receiver = side == "a" ? b : a
        let source = side == "a" ? aEndpoint : bEndpoint
        if bytes.count == MessageSize.initiation && bytes[0] == 1 { initiationsDelivered += 1 }
        var buffer = bytes
        let result = buffer.withUnsafeMutableBytes {
            receiver.decapsulate(buffer: $0, datagram: 0..<bytes.count, from: source, underLoad: underLoad, now: now, wall: wall)
        }
        let other = side == "a" ? "b" : "a"
        switch result {
        case let .deliver(range):
            if side == "a" { deliveredToB.append(Array(buffer[range])) } else { deliveredToA.append(Array(buffer[range])) }
        case let .control(datagrams):
            wire += datagrams.map { (other, $0) }
        case .keepalive, .drop:
            break
        }
        wire += receiver.drainOutput().map { (other, $0) }
        return result
    }

    func tick() {
        wire += a.tick(now: now, wall: wall).map { ("a", $0) }
        wire += b.tick(now: now, wall: wall).map { ("b", $0) }
    }
}

/// A minimal IPv4 packet from `source` to `destination` with `payload` bytes of data.
func ipv4(_ source: String, _ destination: String, payload: Int = 20, tag: UInt8 = 0) -> [UInt8] {
    let length = 20 + payload
    var p: [UInt8] = [0x45, 0, UInt8(length >> 8), UInt8(length & 0xff), 0, 1, 0, 0, 64, 17, 0, 0]
    p += IPAddress(source)!.bytes + IPAddress(destination)!.bytes
    p += [UInt8](repeating: tag, count: payload)
    return p
}

func ipv6(_ source: String, _ destination: String, payload: Int = 8) -> [UInt8] {
    var p: [UInt8] = [0x60, 0, 0, 0, UInt8(payload >> 8), UInt8(payload & 0xff), 17, 64]
    p += IPAddress(source)!.bytes + IPAddress(destination)!.bytes
    return p + [UInt8](repeating: 7, count: payload)
}

@Suite struct EngineTests {
    @Test func handshakeThenDataBothWaysV4AndV6() {
        let pair = EnginePair()
        let first = ipv4("10.0.0.2", "192.0.2.80", tag: 1)
        guard case let .queued(handshake) = pair.send(first, from: "b") else { Issue.record("expected a handshake"); return }
        #expect(handshake.count == 1 && handshake[0].bytes.count == MessageSize.initiation)
        pair.run()
        // The staged packet went out after the handshake and arrived intact.
        #expect(pair.deliveredToA == [first])
        let reply = ipv4("192.0.2.80", "10.0.0.2", tag: 2)
        guard case .send = pair.send(reply, from: "a") else { Issue.record("a has no session"); return }
        pair.run()
        #expect(pair.deliveredToB == [reply])
        let v6 = ipv6("fd00::2", "2001:db8::80")
        pair.send(v6, from: "b")
        pair.run()
        #expect(pair.deliveredToA.last == v6)
        let status = pair.a.status
        #expect(status.peers[0].endpoint == pair.bEndpoint)
        #expect(status.peers[0].lastHandshake != nil)
        #expect(status.peers[0].lastHandshakeAt == pair.now, "on the monotonic clock too, for the server choice")
        #expect(status.peers[0].rxBytes > 0 && status.peers[0].txBytes > 0)
        #expect(status.drops.values.reduce(0, +) == 0)
    }

    /// Padding stops at the MTU (1420 here), as wireguard-go's and the kernel's do: a packet of
    /// exactly the MTU travels unpadded, in a datagram whose length is not a multiple of 16,
    /// and such a datagram from a peer is taken, not dropped as malformed.
    @Test func paddingStopsAtTheMTUAndUnpaddedDatagramsAreAccepted() {
        #expect(Engine.paddedLength(0, mtu: 1420) == 0)
        #expect(Engine.paddedLength(21, mtu: 1420) == 32)
        #expect(Engine.paddedLength(1410, mtu: 1420) == 1420)
        #expect(Engine.paddedLength(1420, mtu: 1420) == 1420)
        #expect(Engine.paddedLength(3000, mtu: 1420) == 3000)
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        for size in [1410, 1420] {
            let packet = ipv4("10.0.0.2", "192.0.2.80", payload: size - 20)
            guard case let .send(range, _) = pair.send(packet, from: "b") else { Issue.record("no session"); return }
            #expect(range.count == 16 + 1420 + 16)
            pair.run()
            #expect(pair.deliveredToA.last == packet)
        }
        #expect(pair.a.status.drops.values.reduce(0, +) == 0)
    }

    @Test func replayedDataIsDroppedAndCounted() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        pair.send(ipv4("10.0.0.2", "192.0.2.80", tag: 9), from: "b")
        let captured = pair.wire[0].datagram.bytes
        pair.run()
        #expect(pair.deliveredToA.count == 2)
        guard case .drop(.replay) = pair.deliver(captured, from: "b") else { Issue.record("replay accepted"); return }
        #expect(pair.a.status.drops[.replay] == 1)
        #expect(pair.deliveredToA.count == 2)
    }

    @Test func bitFlippedPacketsAreDroppedAndCounted() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        var data = pair.wire.removeFirst().datagram.bytes
        data[20] ^= 0x40
        guard case .drop(.badMAC) = pair.deliver(data, from: "b") else { Issue.record("flipped data accepted"); return }
        // A flipped initiation fails MAC1 before any Diffie-Hellman.
        let other = EnginePair()
        other.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        var initiation = other.wire.removeFirst().datagram.bytes
        initiation[50] ^= 1
        guard case .drop(.badMAC) = other.deliver(initiation, from: "b") else { Issue.record("flipped initiation accepted"); return }
        #expect(pair.a.status.drops[.badMAC] == 1 && other.a.status.drops[.badMAC] == 1)
    }

    @Test func aReplayedInitiationIsRejected() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        let initiation = pair.wire[0].datagram.bytes
        pair.run()
        pair.advance(1)
        guard case .drop(.staleTimestamp) = pair.deliver(initiation, from: "b") else { Issue.record("replayed initiation accepted"); return }
        #expect(pair.a.status.drops[.staleTimestamp] == 1)
    }

    @Test func unknownIndexAndDisallowedSourceAreDropped() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        // b may send only from 10.0.0.2: a packet claiming 10.0.0.3 is refused after decryption.
        pair.send(ipv4("10.0.0.3", "192.0.2.80"), from: "b")
        let results = pair.run()
        guard case .drop(.notAllowedIP)? = results.last else { Issue.record("spoofed source accepted: \(results)"); return }
        var unknown = [UInt8](repeating: 0, count: 32)
        unknown[0] = 4
        unknown[4] = 0xEE
        guard case .drop(.unknownPeer) = pair.deliver(unknown, from: "b") else { Issue.record("unknown index accepted"); return }
        // Nothing routes 203.0.113.9 from a: no peer's AllowedIPs covers it.
        guard case .drop(.noRoute) = pair.send(ipv4("192.0.2.80", "203.0.113.9"), from: "a") else { Issue.record("routed without a route"); return }
    }

    @Test func aForgedResponseDoesNotSpoilThePendingHandshake() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        let initiation = pair.wire[0].datagram.bytes
        // Anyone who knows b's public key can make MAC1 valid; the rest is garbage.
        var forged: [UInt8] = [2, 0, 0, 0, 9, 9, 9, 9] + Array(initiation[4..<8]) + [UInt8](repeating: 7, count: 48)
        forged += Blake2s.mac(key: Noise.mac1Key(pair.bKey.publicKey), forged) + [UInt8](repeating: 0, count: 16)
        guard case .drop(.badMAC) = pair.deliver(forged, from: "a") else { Issue.record("forged response accepted"); return }
        pair.run()
        #expect(pair.deliveredToA.count == 1, "the real response still completed the handshake")
    }

    @Test func mismatchedPresharedKeysNeverEstablishASession() {
        let pair = EnginePair(psk: PresharedKey(secret: SecretBytes([UInt8](repeating: 1, count: 32))),
                              bPSK: PresharedKey(secret: SecretBytes([UInt8](repeating: 2, count: 32))))
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        #expect(pair.deliveredToA.isEmpty)
        #expect(pair.b.status.drops[.badMAC] == 1)
    }

    @Test func underLoadTheResponderAsksForACookieAndThenLetsThePeerIn() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        let results = pair.run(underLoad: true, limit: 2)
        guard case let .control(reply)? = results.first, reply.first?.bytes.count == MessageSize.cookieReply else {
            Issue.record("no cookie reply: \(results)"); return
        }
        #expect(pair.deliveredToA.isEmpty)
        // The retry carries MAC2 from the cookie and gets through while still under load.
        pair.advance(5.5)
        pair.tick()
        pair.run(underLoad: true)
        #expect(pair.deliveredToA.count == 1)
        #expect(pair.a.status.drops[.rateLimited] == 1)
    }

    /// A source with a valid cookie still gets only 20 handshake messages per second (burst
    /// 5) while under load: beyond that, its messages are dropped before any Diffie-Hellman.
    @Test func underLoadASourceWithACookieIsRateLimited() throws {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run(underLoad: true, limit: 2)
        pair.advance(5.5)
        pair.tick()
        let retry = try #require(pair.wire.first { $0.from == "b" }?.datagram.bytes)
        pair.wire.removeAll()
        let before = pair.a.status.drops
        let results = (0..<10).map { _ in pair.deliver(retry, from: "b", underLoad: true) }
        guard case .control = results[0] else { Issue.record("the first retry was not answered: \(results[0])"); return }
        let after = pair.a.status.drops
        // Four more tokens in the burst: the same initiation again is stale; then the bucket is empty.
        #expect(after[.staleTimestamp, default: 0] - before[.staleTimestamp, default: 0] == 4)
        #expect(after[.rateLimited, default: 0] - before[.rateLimited, default: 0] == 5)
    }

    @Test func rekeysAfterRekeyAfterTimeWithoutLosingPackets() {
        var timing = Timing()
        timing.rekeyAfterTime = .seconds(4)
        timing.rejectAfterTime = .seconds(6)
        timing.keepaliveTimeout = .seconds(1)
        timing.rekeyTimeout = .seconds(1)
        let pair = EnginePair(timing: timing)
        var sent = 0
        for step in 0..<200 {
            pair.send(ipv4("10.0.0.2", "192.0.2.80", tag: UInt8(step % 256)), from: "b")
            sent += 1
            pair.run()
            pair.send(ipv4("192.0.2.80", "10.0.0.2"), from: "a")
            pair.run()
            pair.advance(0.1)
            pair.tick()
            pair.run()
        }
        // 20 seconds at a rekey every 4: several handshakes, and not one packet lost.
        #expect(pair.initiationsDelivered >= 4)
        #expect(pair.deliveredToA.count == sent)
        #expect(pair.a.status.drops.values.reduce(0, +) == 0)
    }

    @Test func keysExpireWithoutTrafficAndAKeepaliveFollowsData() {
        var timing = Timing()
        timing.keepaliveTimeout = .seconds(1)
        let pair = EnginePair(timing: timing)
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        // a received data and has nothing to say: after KEEPALIVE_TIMEOUT it sends a keepalive.
        pair.advance(1.2)
        pair.tick()
        let keepalives = pair.wire.filter { $0.from == "a" && $0.datagram.bytes.count == MessageSize.transportMinimum }
        #expect(keepalives.count == 1)
        let results = pair.run()
        guard case .keepalive? = results.first else { Issue.record("no keepalive: \(results)"); return }
        // After REJECT_AFTER_TIME the session is gone: data waits for a new handshake.
        pair.advance(181)
        pair.tick()
        pair.wire.removeAll()
        guard case .queued = pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b") else { Issue.record("expired session used"); return }
    }

    @Test func theEndpointFollowsARoamingPeer() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        pair.bEndpoint = Endpoint(address: IPAddress("2001:db8:9::9")!, port: 1234)
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        #expect(pair.a.status.peers[0].endpoint == pair.bEndpoint)
        guard case let .send(_, to) = pair.send(ipv4("192.0.2.80", "10.0.0.2"), from: "a") else { Issue.record("no session"); return }
        #expect(to == pair.bEndpoint)
    }

    @Test func garbageOfEveryLengthIsDroppedNotCrashed() {
        let pair = EnginePair()
        var rng = SystemRandomNumberGenerator()
        for length in 0...200 {
            for type: UInt8 in [1, 2, 3, 4, 0, 255] {
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if length > 0 { bytes[0] = type }
                if length > 3 { bytes[1] = 0; bytes[2] = 0; bytes[3] = 0 }
                guard case .drop = pair.deliver(bytes, from: "b") else { Issue.record("garbage of \(length) accepted"); return }
            }
        }
        let drops = pair.a.status.drops
        #expect(drops[.malformed, default: 0] > 0 && drops[.badMAC, default: 0] > 0 && drops[.unknownPeer, default: 0] > 0)
    }

    @Test func peersCanBeReconfiguredAndRemoved() {
        let pair = EnginePair()
        let peer = pair.bKey.publicKey
        pair.a.upsertPeer(PeerConfiguration(publicKey: peer, allowedIPs: [IPPrefix("10.9.0.0/16")!]), replaceAllowedIPs: false)
        #expect(pair.a.status.peers[0].allowedIPs.map(\.description) == ["10.0.0.2/32", "10.9.0.0/16", "fd00::2/128"])
        pair.a.upsertPeer(PeerConfiguration(publicKey: peer, allowedIPs: [IPPrefix("10.8.0.0/16")!]), replaceAllowedIPs: true)
        #expect(pair.a.status.peers[0].allowedIPs.map(\.description) == ["10.8.0.0/16"])
        pair.a.removePeer(peer)
        #expect(pair.a.status.peers.isEmpty)
    }

    /// An on-demand teardown: the peer's sessions, handshake and staged packets go, the peer
    /// and its byte counters stay; the old session's packets are refused; a new handshake
    /// brings data through again and the counters go on from where they were.
    @Test func resettingSessionsKeepsThePeerAndItsCounters() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80", tag: 1), from: "b")
        pair.run()
        pair.send(ipv4("192.0.2.80", "10.0.0.2", tag: 3), from: "a")
        pair.run()
        let before = pair.b.status.peers[0]
        #expect(before.lastHandshake != nil && before.txBytes > 0 && before.rxBytes > 0)
        // A datagram of the session about to go, held back.
        var held = [UInt8](repeating: 0, count: 16 + 40 + 64)
        let packet = ipv4("192.0.2.80", "10.0.0.2", tag: 9)
        held.replaceSubrange(16..<56, with: packet)
        guard case let .send(range, _) = held.withUnsafeMutableBytes({ pair.a.encapsulate(buffer: $0, packet: 16..<56, now: pair.now, wall: pair.wall) }) else {
            Issue.record("a has no session"); return
        }
        let oldDatagram = Array(held[range])

        pair.b.resetSessions(pair.aKey.publicKey)
        let after = pair.b.status.peers[0]
        #expect(after.lastHandshake == nil && after.lastHandshakeAt == nil, "no session")
        #expect(after.txBytes == before.txBytes && after.rxBytes == before.rxBytes, "the counters stay")
        #expect(after.allowedIPs == before.allowedIPs && after.endpoint == before.endpoint)
        #expect(pair.b.drainOutput().isEmpty)
        pair.advance(30)
        #expect(pair.b.tick(now: pair.now, wall: pair.wall).isEmpty, "no timer left: nothing to send")
        // The old session's datagram finds no key.
        guard case .drop = pair.deliver(oldDatagram, from: "a") else { Issue.record("the old session still decrypts"); return }
        #expect(pair.deliveredToB.count == 1)

        // Data asks for a new handshake; it completes and the counters go on.
        guard case .queued = pair.send(ipv4("10.0.0.2", "192.0.2.80", tag: 2), from: "b") else { Issue.record("expected a handshake"); return }
        pair.run()
        #expect(pair.deliveredToA.count == 2)
        pair.send(ipv4("192.0.2.80", "10.0.0.2", tag: 4), from: "a")
        pair.run()
        #expect(pair.deliveredToB.count == 2, "the reply before the reset and this one, not the held datagram")
        let again = pair.b.status.peers[0]
        #expect(again.lastHandshake != nil && again.txBytes > before.txBytes && again.rxBytes > before.rxBytes)
        pair.b.resetSessions(PrivateKey.generate().publicKey)  // an unknown key: nothing happens
        #expect(pair.b.status.peers.count == 1 && pair.b.status.peers[0].lastHandshake != nil)
    }

    /// A bring-up right after a teardown: the initiation the floor holds back is delayed,
    /// not lost (no retry timer survives the reset to send it otherwise).
    @Test func aHandshakeAskedForRightAfterAResetLeavesWhenTheFloorAllows() {
        let pair = EnginePair()
        pair.b.keepalive(pair.aKey.publicKey, now: pair.now, wall: pair.wall)
        #expect(pair.b.drainOutput().count == 1, "the first initiation")
        pair.b.resetSessions(pair.aKey.publicKey)
        pair.advance(1)
        pair.b.keepalive(pair.aKey.publicKey, now: pair.now, wall: pair.wall)
        #expect(pair.b.drainOutput().isEmpty, "within REKEY_TIMEOUT of the last: held by the floor")
        pair.advance(4.5)
        let retried = pair.b.tick(now: pair.now, wall: pair.wall)
        #expect(retried.count == 1 && retried.first?.bytes.count == MessageSize.initiation, "it leaves once the floor allows")
    }

    /// `wg set` with `allowed_ip=-PREFIX`: changes apply in order after the configuration's
    /// own prefixes, and a removal takes only what is the peer's.
    @Test func allowedIPChangesApplyInOrderAndRemoveOnlyThePeersOwn() {
        let pair = EnginePair()
        let peer = pair.bKey.publicKey
        let other = PrivateKey.generate().publicKey
        pair.a.upsertPeer(PeerConfiguration(publicKey: other, allowedIPs: [IPPrefix("10.7.0.0/16")!]), replaceAllowedIPs: true)
        pair.a.upsertPeer(PeerConfiguration(publicKey: peer, allowedIPs: [IPPrefix("10.9.0.0/16")!]), replaceAllowedIPs: false,
                          then: [.remove(IPPrefix("10.0.0.2/32")!), .remove(IPPrefix("10.7.0.0/16")!), .add(IPPrefix("10.5.0.0/16")!),
                                 .remove(IPPrefix("10.9.0.0/16")!), .add(IPPrefix("10.9.0.0/16")!)])
        let status = pair.a.status
        #expect(status.peers[0].allowedIPs.map(\.description) == ["10.5.0.0/16", "10.9.0.0/16", "fd00::2/128"])
        #expect(status.peers[1].allowedIPs.map(\.description) == ["10.7.0.0/16"])
        // The removed prefix no longer routes: b's old address is not a's peer any more.
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        #expect(pair.deliveredToA.isEmpty && pair.a.status.drops[.notAllowedIP] == 1)
    }

    /// Switching persistent keepalive on sends a keepalive at once (wireguard-go, the
    /// kernel): without a session it starts the handshake and follows it; with one, it
    /// goes straight out. Nothing answers it, and it counts as no data.
    @Test func aKeepaliveOnRequestStartsTheHandshakeOrGoesOverTheSession() {
        let pair = EnginePair()
        pair.b.keepalive(pair.aKey.publicKey, now: pair.now, wall: pair.wall)
        let first = pair.b.drainOutput()
        #expect(first.count == 1 && first[0].bytes.count == MessageSize.initiation)
        pair.wire += first.map { ("b", $0) }
        let results = pair.run()
        #expect(results.filter { if case .keepalive = $0 { true } else { false } }.count == 1)
        #expect(pair.a.status.peers[0].lastHandshake != nil && pair.deliveredToA.isEmpty)
        pair.b.keepalive(pair.aKey.publicKey, now: pair.now, wall: pair.wall)
        let second = pair.b.drainOutput()
        #expect(second.count == 1 && second[0].bytes.count == 32)
        #expect(pair.b.drainOutput().isEmpty && pair.a.status.drops.values.reduce(0, +) == 0)
    }

    /// wg-quick sets the MTU after the engine started: padding follows the new one.
    @Test func paddingFollowsAChangedMTU() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "192.0.2.80"), from: "b")
        pair.run()
        let packet = ipv4("10.0.0.2", "192.0.2.80", payload: 1396 - 20)
        guard case let .send(before, _) = pair.send(packet, from: "b") else { Issue.record("no session"); return }
        #expect(before.count == 16 + 1408 + 16)
        pair.b.setMTU(1400)
        guard case let .send(after, _) = pair.send(packet, from: "b") else { Issue.record("no session"); return }
        #expect(pair.b.mtu == 1400 && after.count == 16 + 1400 + 16)
        pair.run()
        #expect(pair.deliveredToA.suffix(2) == [packet, packet])
    }
}

@Suite struct ReplayWindowTests {
    @Test func acceptsEachCounterOnceWithinTheWindow() {
        var w = ReplayWindow()
        let limit = UInt64.max - (1 << 13)
        let window = ReplayWindow.windowSize
        let counters: [UInt64] = [0, 0, 5, 3, 3, 3000, 3000 - window - 1, 3000 - window + 1, limit, 100_000, 99_999, 100_000]
        let accepted = counters.map { w.accept($0, limit: limit) }
        // Repeats refused; one too old for the window refused; the limit refused; a jump
        // past the ring forgets what is behind it.
        #expect(accepted == [true, false, true, true, false, true, false, true, false, true, true, false])
    }

    @Test func matchesASetModelOnRandomTraffic() {
        var w = ReplayWindow()
        var seen = Set<UInt64>()
        var highest: UInt64 = 0
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let counter = UInt64.random(in: 0...(highest + 100), using: &rng)
            let expected = !seen.contains(counter) && (counter > highest || highest - counter <= ReplayWindow.windowSize)
            let accepted = w.accept(counter, limit: .max)
            #expect(accepted == expected)
            if expected { seen.insert(counter); highest = max(highest, counter) }
        }
    }
}

@Suite struct AllowedIPsTests {
    @Test func longestPrefixWins() {
        var t = AllowedIPs()
        t.insert(IPPrefix("0.0.0.0/0")!, peer: 1)
        t.insert(IPPrefix("10.0.0.0/8")!, peer: 2)
        t.insert(IPPrefix("10.1.2.3/32")!, peer: 3)
        t.insert(IPPrefix("2001:db8::/32")!, peer: 4)
        #expect(t.lookup(IPAddress("192.0.2.1")!) == 1)
        #expect(t.lookup(IPAddress("10.9.9.9")!) == 2)
        #expect(t.lookup(IPAddress("10.1.2.3")!) == 3)
        #expect(t.lookup(IPAddress("2001:db8:1::1")!) == 4)
        #expect(t.lookup(IPAddress("2001:db9::1")!) == nil)
        t.removeAll(peer: 2)
        #expect(t.lookup(IPAddress("10.9.9.9")!) == 1)
        // A prefix belongs to one peer: inserting it for another moves it.
        t.insert(IPPrefix("10.1.2.3/32")!, peer: 5)
        #expect(t.lookup(IPAddress("10.1.2.3")!) == 5 && t.prefixes(of: 3).isEmpty)
    }

    @Test func removingAPrefixTakesItOnlyFromItsPeer() {
        var t = AllowedIPs()
        t.insert(IPPrefix("0.0.0.0/0")!, peer: 1)
        t.insert(IPPrefix("10.0.0.0/8")!, peer: 2)
        t.remove(IPPrefix("10.0.0.0/8")!, peer: 1)
        #expect(t.lookup(IPAddress("10.1.1.1")!) == 2)
        t.remove(IPPrefix("10.255.0.0/8")!, peer: 2)
        #expect(t.lookup(IPAddress("10.1.1.1")!) == 1 && t.prefixes(of: 2).isEmpty)
    }

    @Test func agreesWithALinearScanOnRandomTables() {
        var rng = SystemRandomNumberGenerator()
        var t = AllowedIPs()
        var table: [(IPPrefix, Int)] = []
        for peer in 0..<200 {
            let length = Int.random(in: 0...32, using: &rng)
            let prefix = IPPrefix(address: .v4(UInt32.random(in: 0...UInt32.max, using: &rng)), length: length)!.network
            t.insert(prefix, peer: peer)
            table.removeAll { $0.0 == prefix }
            table.append((prefix, peer))
            // Now and then a removal, for its owner or for someone else.
            if peer % 5 == 0, let (victim, owner) = table.randomElement(using: &rng) {
                let asker = Bool.random(using: &rng) ? owner : owner + 1
                t.remove(victim, peer: asker)
                if asker == owner { table.removeAll { $0.0 == victim } }
            }
        }
        for _ in 0..<2000 {
            let address = IPAddress.v4(UInt32.random(in: 0...UInt32.max, using: &rng))
            let expected = table.filter { $0.0.contains(address) }.max { $0.0.length < $1.0.length }?.1
            #expect(t.lookup(address) == expected)
        }
    }
}
