import Monotonic
import Testing

/// The one monotonic clock's arithmetic: what the WireGuard timers and the DNS proxy's
/// deadlines rely on (spans never negative, a negative span moves nothing).
@Suite struct MonotonicInstantTests {
    let start = MonotonicInstant(nanoseconds: 5_000_000_000)

    @Test func addingASpanMovesByItsNanoseconds() {
        #expect(start + .milliseconds(1500) == MonotonicInstant(nanoseconds: 6_500_000_000))
        #expect(start + .nanoseconds(1) == MonotonicInstant(nanoseconds: 5_000_000_001))
        #expect(start + .seconds(-3) == start, "a negative span moves nothing")
    }

    @Test func sinceIsTheSpanBetweenAndZeroBackwards() {
        let later = start + .seconds(2.25)
        #expect(later.since(start) == .milliseconds(2250))
        #expect(start.since(later) == .zero)
        #expect(start.since(start) == .zero)
    }

    @Test func durationNanosecondsCountWholeNanosecondsAndNegativeAsZero() {
        #expect(Duration.seconds(120).nanoseconds == 120_000_000_000)
        #expect(Duration.microseconds(3).nanoseconds == 3000)
        #expect(Duration.seconds(-1).nanoseconds == 0)
        #expect(Duration(nanoseconds: 42) == .nanoseconds(42))
        #expect(Duration(nanoseconds: .max) == .nanoseconds(Int64.max), "clamped, not trapped")
    }

    @Test func instantsOrderByTime() {
        #expect(start < start + .nanoseconds(1))
        #expect(MonotonicInstant.seconds(1.5) == MonotonicInstant(nanoseconds: 1_500_000_000))
    }

    @Test func theClockNeverGoesBack() {
        var previous = MonotonicInstant.now()
        #expect(previous.nanoseconds > 0)
        for _ in 0..<1000 {
            let next = MonotonicInstant.now()
            #expect(next >= previous)
            previous = next
        }
    }
}
