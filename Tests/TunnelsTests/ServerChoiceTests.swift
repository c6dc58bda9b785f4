import Monotonic
import Policy
import Testing
import Tunnels

/// Which server a built-in tunnel uses, fed with the monotonic clock (each step an instant), the engine's latest handshake and
/// its count of unanswered initiations.
@Suite struct ServerChoiceTests {
    @Test func failoverMovesOnAfterNUnansweredInitiationsInOrderAndWrapsAround() {
        var choice = ServerChoice(mode: .failover, count: 3)
        #expect(choice.failoverAfter == 3)
        #expect(choice.step(now: .seconds(100), lastHandshake: nil) == .probe, "asks the first server at once")
        #expect(choice.current == 0 && choice.reason == "first in order")
        #expect(choice.step(now: .seconds(101), lastHandshake: nil, failed: 0) == .none)
        #expect(choice.step(now: .seconds(110), lastHandshake: nil, failed: 2) == .none, "two unanswered")
        #expect(choice.step(now: .seconds(400), lastHandshake: nil, failed: 2) == .none, "time alone does not switch: the schedule spaces the tries")
        #expect(choice.step(now: .seconds(401), lastHandshake: nil, failed: 3) == .use(1))
        #expect(choice.reason == "server 1 left 3 initiations unanswered")
        // The new engine's first look sets its baseline (a count carried over is not its own).
        #expect(choice.step(now: .seconds(402), lastHandshake: nil, failed: 1) == .none)
        #expect(choice.step(now: .seconds(416), lastHandshake: nil, failed: 4) == .use(2))
        #expect(choice.step(now: .seconds(417), lastHandshake: nil, failed: 0) == .none)
        #expect(choice.step(now: .seconds(431), lastHandshake: nil, failed: 3) == .use(0), "after the last, the first again")
        _ = choice.step(now: .seconds(432), lastHandshake: nil, failed: 0)
        // A handshake from before the probe does not count.
        #expect(choice.step(now: .seconds(433), lastHandshake: .seconds(420), failed: 1) == .none && !choice.isUp)
        #expect(choice.step(now: .seconds(434), lastHandshake: .seconds(433.2), failed: 0) == .none)
        #expect(choice.isUp && choice.current == 0)
    }

    @Test func theEnginesCountLessTheInitiationWaitingForItsAnswer() {
        #expect(ServerChoice.failedInitiations(attempts: 0, retryScheduled: false) == 0)
        #expect(ServerChoice.failedInitiations(attempts: 1, retryScheduled: true) == 0, "the first is in flight")
        #expect(ServerChoice.failedInitiations(attempts: 4, retryScheduled: true) == 3)
        #expect(ServerChoice.failedInitiations(attempts: 19, retryScheduled: false) == 19, "WireGuard's schedule gave up: all failed")
    }

    @Test func aNetworkChangeThatRestartsTheEnginesCountRestartsTheBaseline() {
        var choice = ServerChoice(mode: .failover, count: 2, failoverAfter: 2)
        _ = choice.step(now: .seconds(0), lastHandshake: nil)
        _ = choice.step(now: .seconds(1), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(6), lastHandshake: nil, failed: 1) == .none)
        #expect(choice.step(now: .seconds(7), lastHandshake: nil, failed: 0) == .none, "the engine counts again from zero")
        #expect(choice.step(now: .seconds(12), lastHandshake: nil, failed: 1) == .none)
        #expect(choice.step(now: .seconds(17), lastHandshake: nil, failed: 2) == .use(1))
    }

    @Test func anUpServerIsTestedAgainOnceItsSessionExpired() {
        var choice = ServerChoice(mode: .failover, count: 2)
        _ = choice.step(now: .seconds(0), lastHandshake: nil)
        #expect(choice.step(now: .seconds(1), lastHandshake: .seconds(0.5)) == .none && choice.isUp)
        #expect(choice.step(now: .seconds(180), lastHandshake: .seconds(0.5)) == .none, "a session lives 180 s")
        #expect(choice.step(now: .seconds(181), lastHandshake: .seconds(0.5)) == .probe)
        #expect(choice.step(now: .seconds(182), lastHandshake: .seconds(0.5), failed: 0) == .none)
        #expect(choice.step(now: .seconds(196), lastHandshake: .seconds(0.5), failed: 3) == .use(1), "no handshake for the probe: the next server")
        #expect(choice.step(now: .seconds(197), lastHandshake: .seconds(196.1)) == .none && choice.isUp && choice.current == 1)
    }

    /// The first server is the preferred one: an idle tunnel goes back to it when its session
    /// expires, at most once per 10 minutes after the first last failed; never while in use.
    @Test func anIdleTunnelGoesBackToThePreferredServerWithoutFlapping() {
        var choice = ServerChoice(mode: .failover, count: 2)
        _ = choice.step(now: .seconds(0), lastHandshake: nil)
        _ = choice.step(now: .seconds(1), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(16), lastHandshake: nil, failed: 3) == .use(1))
        _ = choice.step(now: .seconds(17), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(18), lastHandshake: .seconds(17.5)) == .none && choice.isUp && choice.current == 1)
        // In use (handshakes every 2 min): stays, however long.
        #expect(choice.step(now: .seconds(700), lastHandshake: .seconds(600)) == .none && choice.current == 1)
        // Idle: the session expired (no handshake for 180 s), the first failed over 10 minutes ago: back to it.
        #expect(choice.step(now: .seconds(781), lastHandshake: .seconds(600)) == .use(0))
        #expect(choice.reason == "back to the preferred server 1 (the tunnel was idle)")
        _ = choice.step(now: .seconds(782), lastHandshake: .seconds(600), failed: 0)
        #expect(choice.step(now: .seconds(797), lastHandshake: .seconds(600), failed: 3) == .use(1), "still dead: on to server 2 again")
        _ = choice.step(now: .seconds(798), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(799), lastHandshake: .seconds(798.5)) == .none && choice.current == 1)
        // The next expiry within 10 minutes of that failure only tests server 2.
        #expect(choice.step(now: .seconds(980), lastHandshake: .seconds(798.5)) == .probe && choice.current == 1)
        _ = choice.step(now: .seconds(981), lastHandshake: .seconds(798.5), failed: 0)
        #expect(choice.step(now: .seconds(982), lastHandshake: .seconds(981.5)) == .none && choice.isUp)
        #expect(choice.step(now: .seconds(1400), lastHandshake: .seconds(1200)) == .use(0), "10 minutes after it failed, the first again")
    }

    @Test func fastestMeasuresEachAndKeepsTheShortestRoundTrip() {
        var choice = ServerChoice(mode: .fastest, count: 3)
        #expect(choice.step(now: .seconds(0), lastHandshake: nil) == .probe)
        #expect(choice.step(now: .seconds(1), lastHandshake: .seconds(0.4)) == .use(1), "server 1: 400 ms; on to server 2")
        #expect(choice.step(now: .seconds(1.5), lastHandshake: .seconds(0.4)) == .none)
        #expect(choice.step(now: .seconds(2), lastHandshake: .seconds(1.05)) == .use(2), "server 2: 50 ms")
        #expect(choice.step(now: .seconds(2.5), lastHandshake: nil, failed: 0) == .none)
        #expect(choice.step(now: .seconds(17), lastHandshake: nil, failed: 3) == .use(1), "server 3 never answered: server 2 wins")
        #expect(choice.reason == "fastest: handshake in 50 ms (server 1 400 ms)")
        #expect(choice.roundTrips[2] == .unanswered)
        #expect(choice.step(now: .seconds(17.5), lastHandshake: .seconds(17.06)) == .none && choice.isUp && choice.current == 1)
        // A network change measures again; the winner now is the first.
        #expect(choice.networkChanged(now: .seconds(100)) == .probe)
        #expect(choice.step(now: .seconds(101), lastHandshake: .seconds(100.3)) == .use(0))
        #expect(choice.step(now: .seconds(102), lastHandshake: .seconds(101.01)) == .use(2))
        #expect(choice.step(now: .seconds(103), lastHandshake: .seconds(102.5)) == .use(0))
        #expect(choice.current == 0 && choice.reason.hasPrefix("fastest: handshake in 10 ms"))
        // fastest does not go back to the first when idle: the measurement decides.
        #expect(choice.step(now: .seconds(104), lastHandshake: .seconds(103.01)) == .none && choice.isUp)
    }

    @Test func fastestWhenTheNearestIsTheLastMeasuredStaysWithoutARestart() {
        var choice = ServerChoice(mode: .fastest, count: 2)
        _ = choice.step(now: .seconds(0), lastHandshake: nil)
        #expect(choice.step(now: .seconds(1), lastHandshake: .seconds(0.3)) == .use(1))
        #expect(choice.step(now: .seconds(2), lastHandshake: .seconds(1.02)) == .none)
        #expect(choice.isUp && choice.current == 1)
    }

    @Test func noServerAnswersAndTheyAreTriedInOrder() {
        var choice = ServerChoice(mode: .fastest, count: 2, failoverAfter: 1)
        _ = choice.step(now: .seconds(0), lastHandshake: nil)
        _ = choice.step(now: .seconds(1), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(6), lastHandshake: nil, failed: 1) == .use(1))
        _ = choice.step(now: .seconds(7), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(12), lastHandshake: nil, failed: 1) == .use(0))
        #expect(choice.reason == "no server answered 1 initiations; trying them in order")
        _ = choice.step(now: .seconds(13), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(18), lastHandshake: nil, failed: 1) == .use(1), "then as failover")
    }

    @Test func oneServerIsAskedAgainNotRestarted() {
        var choice = ServerChoice(mode: .failover, count: 1)
        _ = choice.step(now: .seconds(0), lastHandshake: nil)
        _ = choice.step(now: .seconds(1), lastHandshake: nil, failed: 0)
        #expect(choice.step(now: .seconds(15), lastHandshake: nil, failed: 3) == .probe)
    }
}

/// A server in use that stops answering while members send: the engine's new handshakes
/// go unanswered and are counted.
@Suite struct ServerSilenceTests {
    @Test func aServerInUseThatLeavesNInitiationsUnansweredGivesWay() {
        var choice = ServerChoice(mode: .failover, count: 2)
        _ = choice.step(now: .seconds(0), lastHandshake: nil)
        #expect(choice.step(now: .seconds(1), lastHandshake: .seconds(0.5)) == .none && choice.isUp)
        #expect(choice.step(now: .seconds(40), lastHandshake: .seconds(0.5), failed: 0) == .none)
        #expect(choice.step(now: .seconds(59), lastHandshake: .seconds(0.5), failed: 2) == .none)
        #expect(choice.step(now: .seconds(60), lastHandshake: .seconds(0.5), failed: 3) == .use(1))
        #expect(choice.reason == "server 1 stopped answering (3 initiations unanswered)")
        _ = choice.step(now: .seconds(61), lastHandshake: .seconds(0.5), failed: 0)
        #expect(choice.step(now: .seconds(62), lastHandshake: .seconds(61.2)) == .none && choice.isUp && choice.current == 1)
    }
}
