import Monotonic
import Routing
import Testing
@testable import Tunnels

/// Who holds a tunnel device vpnd cannot ask about, as the part looks: a holder found is
/// asked alone; with none known, every process is looked through at most every 10 s of the
/// clock the test steps, and at once for a new device.
@Suite struct TunnelHolderCacheTests {
    /// The inspector: what it answers, and what it was asked (0: every process; -pid: one).
    final class Inspector {
        var answer = ""
        var asked: [Int32] = []
        func ask(_ request: Int32) -> [UInt8]? {
            asked.append(request)
            return Array(answer.utf8)
        }
    }

    let start = MonotonicInstant.seconds(1000)
    func at(_ ms: UInt64) -> MonotonicInstant { start + .milliseconds(ms) }
    let tun = Link(index: 7, name: "tun0", isUp: true, isRunning: true, mtu: 1500)

    @Test func withNoHolderEveryProcessIsLookedThroughAtMostEveryTenSeconds() {
        let cache = TunnelHolderCache(), inspector = Inspector()
        #expect(cache.holders(of: "tun0", link: tun, now: at(0), ask: inspector.ask) == [])
        #expect(cache.holders(of: "tun0", link: tun, now: at(9_999), ask: inspector.ask) == [])
        #expect(inspector.asked == [0], "not again within 10 s")
        #expect(cache.holders(of: "tun0", link: tun, now: at(10_000), ask: inspector.ask) == [])
        #expect(inspector.asked == [0, 0])
        // Another device by that name (another index): looked for at once.
        var again = tun
        again.index = 8
        inspector.answer = "4242 tun0 99\n"
        #expect(cache.holders(of: "tun0", link: again, now: at(10_001), ask: inspector.ask)?.map(\.pid) == [4242])
        #expect(inspector.asked == [0, 0, 0])
    }

    @Test func aHolderFoundIsAskedAloneUntilItLetsGo() {
        let cache = TunnelHolderCache(), inspector = Inspector()
        inspector.answer = "4242 tun0 99\n17 other0 5\n"
        #expect(cache.holders(of: "tun0", link: tun, now: at(0), ask: inspector.ask)?.map(\.socketInodes) == [[99]])
        inspector.answer = "4242 tun0 99 100\n"
        #expect(cache.holders(of: "tun0", link: tun, now: at(1000), ask: inspector.ask)?.map(\.socketInodes) == [[99, 100]], "a new socket of it")
        #expect(inspector.asked == [0, -4242])
        // It let go: every process again, at once.
        inspector.answer = ""
        #expect(cache.holders(of: "tun0", link: tun, now: at(2000), ask: inspector.ask) == [])
        #expect(inspector.asked == [0, -4242, -4242, 0])
    }
}
