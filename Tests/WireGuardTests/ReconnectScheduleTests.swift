import Addresses
import Monotonic
import Testing
@testable import WireGuard

/// The reconnection schedule as a pure value fed with a fake clock, then through two engines
/// back to back (EnginePair) where nothing answers b's initiations unless a test delivers them.
@Suite struct ReconnectScheduleTests {
    let floor = MonotonicInstant.Duration.seconds(5)
    let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    @Test func backoffDoublesFromTheMinimumToTheCap() {
        let s = ReconnectSchedule(policy: .backoff(minimum: .seconds(5), maximum: .seconds(60)), floor: floor)
        #expect((1...8).map { s.delay(after: $0).nanoseconds / 1_000_000_000 } == [5, 10, 20, 40, 60, 60, 60, 60])
        #expect(s.delay(after: 1000) == .seconds(60))
    }

    @Test func theProtocolDefaultIsWireGuardsFixedRetryWithItsJitter() {
        let policy = ReconnectPolicy.protocolDefault()
        #expect(policy.maximumRetries == 18)
        #expect(policy.stormLimit == 12)
        var s = ReconnectSchedule(policy: policy, floor: floor)
        #expect((1...20).allSatisfy { s.delay(after: $0) == .seconds(5) })
        // Jitter up to 333 ms, as `rekeyTimeout + random % 334 ms` before the schedule existed.
        #expect(s.initiated(t0, random: 333) == t0 + .seconds(5) + .milliseconds(333))
        #expect(s.initiated(t0 + .seconds(6), random: 334) == t0 + .seconds(11))
    }

    @Test func jitterIsAFifteenthOfTheDelay() {
        var s = ReconnectSchedule(policy: .backoff(minimum: .seconds(5), maximum: .seconds(60)), floor: floor)
        var now = t0
        for _ in 1...5 { now = s.initiated(now, random: 0) }
        // Sixth try: 60 s, jitter below 4 s (60/15) + 1 ms.
        let next = s.initiated(now, random: UInt32.max)
        #expect(next.since(now) >= .seconds(60) && next.since(now) <= .seconds(64.001))
    }

    @Test func aDelayNeverGoesUnderTheFloor() {
        let s = ReconnectSchedule(policy: .backoff(minimum: .seconds(1), maximum: .seconds(2)), floor: floor)
        #expect(s.delay(after: 1) == floor && s.delay(after: 5) == floor)
    }

    @Test func theFloorSpacesInitiationsWhateverTriggersThem() {
        var s = ReconnectSchedule(policy: .backoff(minimum: .seconds(5), maximum: .seconds(60)), floor: floor)
        #expect(s.earliest(t0) == t0)
        _ = s.initiated(t0, random: 0)
        #expect(s.earliest(t0 + .seconds(1)) == t0 + floor)
        #expect(s.earliest(t0 + .seconds(7)) == t0 + .seconds(7))
    }

    @Test func theStormLimitBoundsInitiationsPerMinute() {
        var s = ReconnectSchedule(policy: .backoff(minimum: .seconds(5), maximum: .seconds(60)), floor: floor)
        // Something (new data, network changes) asks for a handshake every second for 5 minutes.
        var sent: [MonotonicInstant] = []
        for second in 0..<300 {
            let now = t0 + .seconds(Double(second))
            if s.earliest(now) <= now {
                _ = s.initiated(now, random: 0)
                sent.append(now)
            }
        }
        for start in sent {
            let inWindow = sent.filter { $0 >= start && $0 < start + ReconnectPolicy.stormWindow }
            #expect(inWindow.count <= ReconnectPolicy.backoffStormLimit)
        }
        #expect(sent.count >= 5 * ReconnectPolicy.backoffStormLimit - 1, "the limit throttles, it does not stop: \(sent.count)")
        // The floor spaces them too.
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $1.since($0) >= floor })
    }

    @Test func theFloorAloneHoldsWithoutAnError() {
        var s = ReconnectSchedule(policy: .protocolDefault(), floor: floor)
        for second in [0.0, 5, 10] { _ = s.initiated(t0 + .seconds(second), random: 0) }
        s.unanswered()
        // 3 initiations in the last minute against a limit of 12: only the floor waits.
        let held = s.holdback(t0 + .seconds(11))
        #expect(held?.until == t0 + .seconds(15) && held?.by == .floor)
        #expect(s.hold(t0 + .seconds(11)) == t0 + .seconds(15))
        #expect(s.lastError == .noResponse, "the floor is the protocol's spacing, not an error")
        #expect(s.hold(t0 + .seconds(15)) == nil)
    }

    @Test func theStormLimitIsTheLastErrorOnlyWhileItHoldsAnInitiationBack() {
        var s = ReconnectSchedule(policy: .backoff(minimum: .seconds(5), maximum: .seconds(60)), floor: floor)
        for second in stride(from: 0.0, through: 25, by: 5) { _ = s.initiated(t0 + .seconds(second), random: 0) }
        s.unanswered()
        // Within the floor after the sixth, the floor ends first, but the window frees no
        // slot until the first is a minute old: the storm limit is what holds it.
        let held = s.holdback(t0 + .seconds(27))
        #expect(held?.until == t0 + .seconds(60) && held?.by == .stormLimit)
        #expect(s.hold(t0 + .seconds(27)) == t0 + .seconds(60))
        #expect(s.lastError == .stormLimited)
        #expect(s.hold(t0 + .seconds(40)) == t0 + .seconds(60) && s.lastError == .stormLimited)
        _ = s.initiated(t0 + .seconds(60), random: 0)
        #expect(s.lastError == .noResponse, "the held one left: the error before the hold again")
        // The floor after the seventh and the window's next free slot (the second
        // initiation's minute) end together: the floor is named, the storm limit adds no wait.
        #expect(s.holdback(t0 + .seconds(62))?.by == .floor && s.holdback(t0 + .seconds(62))?.until == t0 + .seconds(65))
    }

    @Test func successAndNetworkChangesResetTheBackoff() {
        var s = ReconnectSchedule(policy: .backoff(minimum: .seconds(5), maximum: .seconds(60)), floor: floor)
        var now = t0
        for _ in 1...4 { now = s.initiated(now, random: 0); s.unanswered() }
        #expect(s.attempts == 4 && s.lastError == .noResponse)
        #expect(s.initiated(now, random: 0).since(now) == .seconds(60))
        s.succeeded()
        #expect(s.attempts == 0 && s.lastError == nil)
        #expect(s.initiated(now + .seconds(100), random: 0).since(now + .seconds(100)) == .seconds(5))
        for _ in 1...3 { _ = s.initiated(now + .seconds(200), random: 0) }
        s.networkChanged()
        #expect(s.attempts == 0)
        #expect(s.initiated(now + .seconds(300), random: 0).since(now + .seconds(300)) == .seconds(5))
    }

    @Test func aCookieReplyIsTheLastErrorUntilTheNextTry() {
        var s = ReconnectSchedule(policy: .protocolDefault(), floor: floor)
        _ = s.initiated(t0, random: 0)
        s.cookieReceived()
        s.unanswered()
        #expect(s.lastError == .cookieRequired)
        _ = s.initiated(t0 + .seconds(5), random: 0)
        s.unanswered()
        #expect(s.lastError == .noResponse)
    }

    @Test func theScheduleDescribesItself() {
        #expect(ReconnectPolicy.protocolDefault().description == "wireguard (every 5s for 90s)")
        #expect(ReconnectPolicy.backoff(minimum: .seconds(5), maximum: .seconds(60)).description == "backoff 5s..60s x2, at most 6/min")
    }
}

@Suite struct EngineReconnectTests {
    /// b's initiations to a (which never gets them), read off b's tick.
    func initiations(_ datagrams: [Datagram]) -> Int { datagrams.filter { $0.bytes.first == 1 }.count }

    @Test func retriesFollowTheBackoffAndStatusShowsThem() throws {
        let pair = EnginePair()
        pair.b.setReconnectPolicy(.backoff(minimum: .seconds(5), maximum: .seconds(20)))
        pair.send(ipv4("10.0.0.2", "10.0.0.1"), from: "b")
        pair.wire = []  // the server is gone
        var sentAt: [Double] = [0]
        for tenth in 1...1200 {
            pair.advance(0.1)
            if initiations(pair.b.tick(now: pair.now, wall: pair.wall)) > 0 { sentAt.append(Double(tenth) / 10) }
        }
        let gaps = zip(sentAt, sentAt.dropFirst()).map { $1 - $0 }
        // 5, 10, 20, 20, ... each plus under 1/15 of jitter; never given up.
        #expect(gaps.count >= 6)
        for (i, gap) in gaps.enumerated() {
            let base = min(5 * pow2(i), 20.0)
            #expect(gap >= base && gap <= base * (1 + 1.0 / 15) + 0.2, "gap \(i): \(gap)")
        }
        let status = try #require(pair.b.reconnection(now: pair.now).first)
        #expect(status.attempts == UInt64(sentAt.count))
        #expect(status.lastError == .noResponse)
        #expect(try #require(status.nextTry) <= .seconds(20 * (1 + 1.0 / 15)))
    }

    @Test func withoutAPolicyTheEngineGivesUpAfterNinetySecondsAsWireGuardDoes() {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "10.0.0.1"), from: "b")
        pair.wire = []
        var count = 1
        for _ in 1...2000 {
            pair.advance(0.1)
            count += initiations(pair.b.tick(now: pair.now, wall: pair.wall))
        }
        #expect(count == 19)  // the first and REKEY_ATTEMPT_TIME / REKEY_TIMEOUT retries
        #expect(pair.b.reconnection(now: pair.now).first?.nextTry == nil)
    }

    @Test func aNetworkChangeStartsAHandshakeAtOnceAndResetsTheBackoff() throws {
        let pair = EnginePair()
        pair.b.setReconnectPolicy(.backoff(minimum: .seconds(5), maximum: .seconds(60)))
        pair.send(ipv4("10.0.0.2", "10.0.0.1"), from: "b")
        pair.wire = []
        // 0, 5, 15, 35 s (+ jitter): at 43 s the next is 40 s away and the floor has passed.
        for _ in 1...430 { pair.advance(0.1); _ = pair.b.tick(now: pair.now, wall: pair.wall) }
        let before = try #require(pair.b.reconnection(now: pair.now).first)
        #expect(before.attempts >= 3 && (before.nextTry ?? .seconds(0)) > .seconds(5))
        pair.b.networkChanged(now: pair.now, wall: pair.wall)
        #expect(initiations(pair.b.drainOutput()) == 1)
        let after = try #require(pair.b.reconnection(now: pair.now).first)
        #expect(after.attempts == 1)
        #expect(try #require(after.nextTry) <= .seconds(5.34))
        // Answered this time: up, nothing due, attempts back to 0.
        pair.advance(after.nextTry!.nanoseconds > 0 ? 5.4 : 0)
        pair.wire = pair.b.tick(now: pair.now, wall: pair.wall).map { ("b", $0) }
        pair.run()
        let up = try #require(pair.b.reconnection(now: pair.now).first)
        #expect(up.attempts == 0 && up.lastError == nil && up.nextTry == nil)
        #expect(pair.deliveredToA.count == 1, "the staged packet arrived")
    }

    @Test func networkChangesInALoopAreHeldByTheStormLimit() {
        let pair = EnginePair()
        pair.b.setReconnectPolicy(.backoff(minimum: .seconds(5), maximum: .seconds(60)))
        var count = 0
        for _ in 1...1200 {  // a flapping network: a change every 100 ms for 2 minutes
            pair.advance(0.1)
            pair.b.networkChanged(now: pair.now, wall: pair.wall)
            count += initiations(pair.b.drainOutput()) + initiations(pair.b.tick(now: pair.now, wall: pair.wall))
        }
        #expect(count <= 2 * ReconnectPolicy.backoffStormLimit && count >= ReconnectPolicy.backoffStormLimit)
        #expect(pair.b.reconnection(now: pair.now).first?.lastError == .stormLimited)
    }

    /// The case: an initiation that only waits for the floor (the tunnel taken down
    /// and brought up again within 5 s of a retry, 3 initiations that minute) is no storm.
    @Test func aBringUpWithinTheFloorWaitsWithoutAStormLimitError() throws {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "10.0.0.1"), from: "b")
        pair.wire = []
        var count = 1
        for _ in 1...110 {
            pair.advance(0.1)
            count += initiations(pair.b.tick(now: pair.now, wall: pair.wall))
        }
        #expect(count == 3)
        pair.b.resetSessions(pair.aKey.publicKey)
        pair.b.keepalive(pair.aKey.publicKey, now: pair.now, wall: pair.wall)
        #expect(initiations(pair.b.drainOutput()) == 0, "held by the floor")
        let held = try #require(pair.b.reconnection(now: pair.now).first)
        #expect(held.lastError == nil, "\(held)")
        #expect(try #require(held.nextTry) <= .seconds(5))
        var left = 0
        for _ in 1...50 {
            pair.advance(0.1)
            left += initiations(pair.b.tick(now: pair.now, wall: pair.wall))
        }
        #expect(left == 1, "it leaves when the floor ends")
    }

    @Test func aReplacingEngineKeepsTheStormLimitAcrossTheRestart() throws {
        let pair = EnginePair()
        pair.b.setReconnectPolicy(.backoff(minimum: .seconds(5), maximum: .seconds(60)))
        // Six initiations within a minute (network changes every 6 s) use up the window.
        for _ in 1...6 {
            pair.b.networkChanged(now: pair.now, wall: pair.wall)
            #expect(initiations(pair.b.drainOutput()) == 1)
            pair.advance(6)
        }
        // A reload with a changed file: a new engine for the same peer takes the schedules.
        let replacement = Engine(configuration: InterfaceConfiguration(privateKey: pair.bKey, peers: [
            PeerConfiguration(publicKey: pair.aKey.publicKey, endpoint: pair.aEndpoint, allowedIPs: [IPPrefix("0.0.0.0/0")!]),
        ]), reconnect: .backoff(minimum: .seconds(5), maximum: .seconds(60)))
        replacement.adoptReconnectSchedules(pair.b.reconnectSchedules)
        replacement.keepalive(pair.aKey.publicKey, now: pair.now, wall: pair.wall)
        #expect(initiations(replacement.drainOutput()) == 0, "held by the storm limit carried over")
        let held = try #require(replacement.reconnection(now: pair.now).first)
        #expect(held.lastError == .stormLimited && held.attempts == 1, "\(held)")  // each network change reset the backoff
        #expect(try #require(held.nextTry) <= .seconds(30))
        // Without the old schedules the same engine would have sent at once.
        let fresh = Engine(configuration: InterfaceConfiguration(privateKey: pair.bKey, peers: [
            PeerConfiguration(publicKey: pair.aKey.publicKey, endpoint: pair.aEndpoint, allowedIPs: [IPPrefix("0.0.0.0/0")!]),
        ]), reconnect: .backoff(minimum: .seconds(5), maximum: .seconds(60)))
        fresh.keepalive(pair.aKey.publicKey, now: pair.now, wall: pair.wall)
        #expect(initiations(fresh.drainOutput()) == 1)
    }

    @Test func aSendErrorAndACookieReplyAreTheLastError() throws {
        let pair = EnginePair()
        pair.send(ipv4("10.0.0.2", "10.0.0.1"), from: "b")
        pair.b.sendFailed(to: pair.aEndpoint, error: "Network is unreachable")
        #expect(pair.b.reconnection(now: pair.now).first?.lastError == .sendFailed("Network is unreachable"))
        #expect(ReconnectError.sendFailed("Network is unreachable").description == "send failed: Network is unreachable")
        // Under load a answers with a cookie reply, not a response.
        pair.run(underLoad: true, limit: 2)
        #expect(pair.b.reconnection(now: pair.now).first?.lastError == .cookieRequired)
        #expect(pair.deliveredToA.isEmpty)
    }
}

private func pow2(_ i: Int) -> Double { Double(1 << i) }
