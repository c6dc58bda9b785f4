import Addresses
import Monotonic
import Testing
@testable import WireGuard

@Suite struct HandshakeRateLimiterTests {
    let start = MonotonicInstant(nanoseconds: 10_000_000_000)

    @Test func aBurstOfFiveThenTwentyPerSecond() {
        var limiter = HandshakeRateLimiter()
        let source = IPAddress("198.51.100.7")!
        #expect((0..<8).map { _ in limiter.allow(source, now: start) } == [true, true, true, true, true, false, false, false])
        // One token every 50 ms (time keeps counting while a message is refused).
        #expect(limiter.allow(source, now: start + .milliseconds(49)) == false)
        #expect((0..<3).map { _ in limiter.allow(source, now: start + .milliseconds(100)) } == [true, true, false])
        // Over a second at a steady 40 per second, about half get through.
        var allowed = 0
        for i in 1...40 where limiter.allow(source, now: start + .milliseconds(100 + UInt64(i) * 25)) { allowed += 1 }
        #expect((19...21).contains(allowed))
        // A second of silence refills the burst, never more.
        let later = start + .seconds(5)
        #expect((0..<7).map { _ in limiter.allow(source, now: later) }.filter { $0 }.count == 5)
    }

    @Test func sourcesAreIndependentButAnIPv6PrefixIsOneSource() {
        var limiter = HandshakeRateLimiter()
        for _ in 0..<5 { _ = limiter.allow(IPAddress("2001:db8:1:2::1")!, now: start) }
        #expect(limiter.allow(IPAddress("2001:db8:1:2::ffff")!, now: start) == false)
        #expect(limiter.allow(IPAddress("2001:db8:1:3::1")!, now: start) == true)
        #expect(limiter.allow(IPAddress("192.0.2.1")!, now: start) == true)
        #expect(limiter.allow(IPAddress("192.0.2.2")!, now: start) == true)
    }

    @Test func idleSourcesAreForgottenAndTheTableIsBounded() {
        var limiter = HandshakeRateLimiter()
        for i in 0..<HandshakeRateLimiter.capacity {
            _ = limiter.allow(.v4(0x0a00_0000 + UInt32(i)), now: start)
        }
        #expect(limiter.trackedSources == HandshakeRateLimiter.capacity)
        #expect(limiter.allow(IPAddress("203.0.113.9")!, now: start + .milliseconds(10)) == false)
        #expect(limiter.allow(IPAddress("203.0.113.9")!, now: start + .seconds(1.5)) == true)
        #expect(limiter.trackedSources == 1)
    }
}
