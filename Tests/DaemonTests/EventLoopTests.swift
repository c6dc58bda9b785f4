@testable import Daemon
import Descriptors
import Glibc
import Monotonic
import Testing
import DaemonLoop

/// vpnd's loop with what it watches typed (a borrowed FileDescriptor or a DescriptorNumber)
/// and its timers on the monotonic clock.
@Suite struct EventLoopTests {
    @Test func aWatchedDescriptorIsHandledUntilItIsUnwatched() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let reader = FileDescriptor(adopting: ends[0]), writer = FileDescriptor(adopting: ends[1])
        let (readable, writable) = (reader.number, writer.number)
        let loop = EventLoop()
        var handled = 0
        loop.watch(reader) { _ in
            handled += 1
            var byte: UInt8 = 0
            _ = read(readable.raw, &byte, 1)
            loop.unwatch(readable)
            // Readable again, but no longer watched: the handler must not run again.
            _ = write(writable.raw, [2], 1)
            loop.after(.milliseconds(50)) { loop.stop() }
        }
        loop.after(.seconds(10)) { loop.stop() }
        _ = write(writer.raw, [1], 1)
        try loop.run()
        #expect(handled == 1)
    }

    /// More descriptors ready than one epoll_wait returns: each is handled, in later rounds.
    @Test func everyReadyDescriptorIsHandledWhenMoreAreReadyThanOneWaitReturns() throws {
        let loop = EventLoop()
        var opened: [Int32] = []
        defer { opened.forEach { close($0) } }
        var handled = Set<DescriptorNumber>()
        for _ in 0..<150 {
            var ends: [Int32] = [-1, -1]
            try #require(pipe(&ends) == 0)
            let readable = DescriptorNumber(borrowing: ends[0])
            loop.watch(readable) { _ in
                handled.insert(readable)
                loop.unwatch(readable)
                if handled.count == 150 { loop.stop() }
            }
            _ = write(ends[1], [1], 1)
            opened += ends
        }
        loop.after(.seconds(10)) { loop.stop() }
        try loop.run()
        #expect(handled.count == 150)
    }

    /// setEvents changes what wakes the handler: a writable pipe watched for nothing is
    /// quiet, then reports POLLOUT.
    @Test func setEventsChangesWhatIsReported() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let reader = FileDescriptor(adopting: ends[0]), writer = FileDescriptor(adopting: ends[1])
        let writable = writer.number
        let loop = EventLoop()
        var reported: [Int16] = []
        loop.watch(writable, events: 0) { events in
            reported.append(events)
            loop.stop()
        }
        loop.after(.milliseconds(50)) { loop.setEvents(writable, Int16(POLLOUT)) }
        loop.after(.seconds(10)) { loop.stop() }
        let started = MonotonicInstant.now()
        try loop.run()
        #expect(reported == [Int16(POLLOUT)])
        #expect(MonotonicInstant.now().since(started) >= .milliseconds(50), "not reported while watched for nothing")
        _ = reader
    }

    /// A descriptor closed before it was unwatched leaves epoll by itself; when its number
    /// comes back for another descriptor, watching that one works.
    @Test func aNumberClosedWithoutUnwatchingCanBeWatchedAgain() throws {
        let loop = EventLoop()
        var first: [Int32] = [-1, -1]
        try #require(pipe(&first) == 0)
        loop.watch(DescriptorNumber(borrowing: first[0])) { _ in Issue.record("the closed pipe's handler ran") }
        close(first[0])
        var second: [Int32] = [-1, -1]
        try #require(pipe(&second) == 0)
        let reader = FileDescriptor(adopting: second[0]), writer = FileDescriptor(adopting: second[1])
        try #require(second[0] == first[0], "the number came back")
        var handled = 0
        loop.watch(reader) { _ in handled += 1; loop.stop() }
        _ = write(writer.raw, [1], 1)
        loop.after(.seconds(10)) { loop.stop() }
        try loop.run()
        #expect(handled == 1)
        close(first[1])
    }

    @Test func timersRunInTheOrderDueOnceOrEveryIntervalUntilCancelled() throws {
        let loop = EventLoop()
        var order: [String] = []
        var ticks = 0
        var ticker = 0
        ticker = loop.every(.milliseconds(10)) {
            ticks += 1
            guard ticks == 3 else { return }
            loop.cancel(ticker)
            // Five more intervals: a ticker still running would tick again meanwhile.
            loop.after(.milliseconds(50)) { loop.stop() }
        }
        loop.after(.milliseconds(30)) { order.append("later") }
        // A delay already over (negative) is due at once: it runs in the next round.
        loop.after(.milliseconds(-5)) { order.append("at once") }
        loop.after(.seconds(10)) { loop.stop() }
        let started = MonotonicInstant.now()
        try loop.run()
        #expect(order == ["at once", "later"])
        #expect(ticks == 3, "cancelled from its own body after the third run")
        // Three intervals, then the stop's 50 ms: no timer ran before it was due.
        #expect(MonotonicInstant.now().since(started) >= .milliseconds(80))
    }
}
