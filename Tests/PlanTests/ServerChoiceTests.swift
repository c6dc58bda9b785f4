import Plan
import Policy
import Testing

/// Which server a built-in tunnel uses, fed with a clock and the engine's latest handshake.
@Suite struct ServerChoiceTests {
    @Test func failoverMovesOnAfterTheWindowInOrderAndWrapsAround() {
        var choice = ServerChoice(mode: .failover, count: 3)
        #expect(choice.step(now: 100, lastHandshake: nil) == .probe, "asks the first server at once")
        #expect(choice.current == 0 && choice.reason == "first in order")
        #expect(choice.step(now: 114.9, lastHandshake: nil) == .none, "within the window")
        #expect(choice.step(now: 115, lastHandshake: nil) == .use(1))
        #expect(choice.reason == "server 1 completed no handshake within 15 s")
        #expect(choice.step(now: 130, lastHandshake: nil) == .use(2))
        #expect(choice.step(now: 145, lastHandshake: nil) == .use(0), "after the last, the first again")
        // A handshake from before the probe does not count.
        #expect(choice.step(now: 150, lastHandshake: 140) == .none)
        #expect(choice.step(now: 151, lastHandshake: 150.2) == .none)
        #expect(choice.isUp && choice.current == 0)
    }

    @Test func anUpServerIsTestedAgainOnceItsSessionExpired() {
        var choice = ServerChoice(mode: .failover, count: 2)
        _ = choice.step(now: 0, lastHandshake: nil)
        #expect(choice.step(now: 1, lastHandshake: 0.5) == .none && choice.isUp)
        #expect(choice.step(now: 180, lastHandshake: 0.5) == .none, "a session lives 180 s")
        #expect(choice.step(now: 181, lastHandshake: 0.5) == .probe)
        #expect(choice.step(now: 196, lastHandshake: 0.5) == .use(1), "no handshake for the probe: the next server")
        #expect(choice.step(now: 197, lastHandshake: 196.1) == .none && choice.isUp && choice.current == 1)
    }

    @Test func fastestMeasuresEachAndKeepsTheShortestRoundTrip() {
        var choice = ServerChoice(mode: .fastest, count: 3)
        #expect(choice.step(now: 0, lastHandshake: nil) == .probe)
        #expect(choice.step(now: 1, lastHandshake: 0.4) == .use(1), "server 1: 400 ms; on to server 2")
        #expect(choice.step(now: 1.5, lastHandshake: 0.4) == .none)
        #expect(choice.step(now: 2, lastHandshake: 1.05) == .use(2), "server 2: 50 ms")
        #expect(choice.step(now: 17, lastHandshake: 1.05) == .use(1), "server 3 never answered: server 2 wins")
        #expect(choice.reason == "fastest: handshake in 50 ms (server 1 400 ms)")
        #expect(choice.roundTrips[2] == .infinity)
        #expect(choice.step(now: 17.5, lastHandshake: 17.06) == .none && choice.isUp && choice.current == 1)
        // A network change measures again; the winner now is the first.
        #expect(choice.networkChanged(now: 100) == .probe)
        #expect(choice.step(now: 101, lastHandshake: 100.3) == .use(0))
        #expect(choice.step(now: 102, lastHandshake: 101.01) == .use(2))
        #expect(choice.step(now: 103, lastHandshake: 102.5) == .use(0))
        #expect(choice.current == 0 && choice.reason.hasPrefix("fastest: handshake in 10 ms"))
    }

    @Test func fastestWhenTheNearestIsTheLastMeasuredStaysWithoutARestart() {
        var choice = ServerChoice(mode: .fastest, count: 2)
        _ = choice.step(now: 0, lastHandshake: nil)
        #expect(choice.step(now: 1, lastHandshake: 0.3) == .use(1))
        #expect(choice.step(now: 2, lastHandshake: 1.02) == .none)
        #expect(choice.isUp && choice.current == 1)
    }

    @Test func noServerAnswersAndTheyAreTriedInOrder() {
        var choice = ServerChoice(mode: .fastest, count: 2)
        _ = choice.step(now: 0, lastHandshake: nil)
        #expect(choice.step(now: 15, lastHandshake: nil) == .use(1))
        #expect(choice.step(now: 30, lastHandshake: nil) == .use(0))
        #expect(choice.reason.hasPrefix("no server completed a handshake"))
        #expect(choice.step(now: 45, lastHandshake: nil) == .use(1), "then as failover")
    }

    @Test func oneServerIsAskedAgainNotRestarted() {
        var choice = ServerChoice(mode: .failover, count: 1)
        _ = choice.step(now: 0, lastHandshake: nil)
        #expect(choice.step(now: 15, lastHandshake: nil) == .probe)
    }
}

/// A server in use that stops answering while members send.
@Suite struct ServerSilenceTests {
    @Test func dataSentAndNothingReceivedFor30SecondsMovesOn() {
        var choice = ServerChoice(mode: .failover, count: 2)
        _ = choice.step(now: 0, lastHandshake: nil)
        #expect(choice.step(now: 1, lastHandshake: 0.5, received: 92, sent: 148) == .none && choice.isUp)
        // Traffic both ways: fine however long.
        #expect(choice.step(now: 40, lastHandshake: 0.5, received: 5000, sent: 5000) == .none)
        #expect(choice.step(now: 69, lastHandshake: 0.5, received: 5000, sent: 9000) == .none, "29 s of silence")
        #expect(choice.step(now: 70, lastHandshake: 0.5, received: 5000, sent: 9100) == .use(1))
        #expect(choice.reason == "server 1 stopped answering (data sent, nothing received for 30 s)")
        // The new engine counts from zero; it answers.
        #expect(choice.step(now: 71, lastHandshake: 70.2, received: 92, sent: 148) == .none && choice.isUp && choice.current == 1)
        #expect(choice.step(now: 100, lastHandshake: 70.2, received: 92, sent: 148) == .none, "idle, nothing sent: no verdict")
    }
}
