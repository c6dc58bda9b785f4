import Descriptors
@testable import ExecRules
import Monotonic
import Plan
import Testing

/// The exec guard's deadline, the clock stepped in milliseconds: an exec of a listed file
/// waits for the answering thread until its deadline, is answered there once (a
/// route.executables program refused, a bypass.executables program allowed where it was
/// started), and the answering thread, stuck past it, has new events answered at once. The
/// real guard is proven in namespaces (ExecGuardTests.aStuckVpndHoldsAListedExecForTheDeadlineOnly).
@Suite struct ExecDeadlinesTests {
    static let deadline: Swift.Duration = .seconds(1)

    static func at(_ milliseconds: UInt64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: 5_000_000_000 + milliseconds * 1_000_000)
    }

    static func event(_ fd: Int32, _ late: ExecutableRules.LateAnswer, names: [String] = ["/usr/bin/x"]) -> ExecDeadlines.Event {
        ExecDeadlines.Event(file: DescriptorNumber(borrowing: fd), pid: 4000 + fd, names: names, lateAnswer: late)
    }

    @Test func aRoutedExecIsRefusedAtItsDeadlineOnceAndNotBefore() {
        var book = ExecDeadlines(deadline: Self.deadline)
        func step<T>(_ body: (inout ExecDeadlines) -> T) -> T { body(&book) }
        let file = DescriptorNumber(borrowing: 7)
        #expect(step { $0.begin([Self.event(7, .refuse)], now: Self.at(0)) }, "nothing waited: the deadline thread is woken")
        #expect(step { $0.answerOverdue(now: Self.at(999)) }.isEmpty, "1 ms before: still the answering thread's")
        #expect(!book.isAnswered(file))
        #expect(book.sleep(now: Self.at(999)) == .milliseconds(2), "it sleeps past the deadline, not up to it")
        let overdue = book.answerOverdue(now: Self.at(1000))
        #expect(overdue.map(\.file) == [file] && overdue.map(\.allow) == [false], "at the deadline: refused")
        #expect(overdue.first?.waiting.pid == 4007 && overdue.first?.waiting.names == ["/usr/bin/x"], "logged with its pid and program")
        #expect(book.counters.refusedLate == 1 && book.counters.allowedLate == 0)
        #expect(step { $0.answerOverdue(now: Self.at(1001)) }.isEmpty && book.counters.refusedLate == 1, "after: not answered again")
        #expect(book.sleep(now: Self.at(1001)) == nil, "nothing left to wait for")
        #expect(book.isAnswered(file), "the answering thread, back, sees it answered and leaves it")
        #expect(!step { $0.finish(file) }, "and does not answer it a second time")
        #expect(book.waiting.isEmpty && book.counters.unplaced == 0)
    }

    @Test func aBypassedExecIsAllowedAtItsDeadline() {
        var book = ExecDeadlines(deadline: Self.deadline)
        func step<T>(_ body: (inout ExecDeadlines) -> T) -> T { body(&book) }
        _ = book.begin([Self.event(8, .allow)], now: Self.at(0))
        #expect(step { $0.answerOverdue(now: Self.at(999)) }.isEmpty)
        #expect(step { $0.answerOverdue(now: Self.at(1000)) }.map(\.allow) == [true], "allowed where it was started")
        #expect(book.counters.allowedLate == 1 && book.counters.refusedLate == 0)
    }

    @Test func anExecAnsweredBeforeItsDeadlineIsLeftAlone() {
        var book = ExecDeadlines(deadline: Self.deadline)
        func step<T>(_ body: (inout ExecDeadlines) -> T) -> T { body(&book) }
        let file = DescriptorNumber(borrowing: 9)
        _ = book.begin([Self.event(9, .refuse)], now: Self.at(0))
        #expect(step { $0.finish(file) }, "answered by the answering thread at 999 ms")
        book.moved("work")
        #expect(!step { $0.endBatch(now: Self.at(999)) }, "within the deadline: the deadline thread need not look")
        #expect(step { $0.answerOverdue(now: Self.at(1000)) }.isEmpty && step { $0.answerOverdue(now: Self.at(5000)) }.isEmpty)
        #expect(book.counters == ExecutableGuard.Counters(moves: ["work": 1]))
        #expect(book.sleep(now: Self.at(1000)) == nil)
    }

    @Test func aMoveThatFailedIsCountedUnplacedUnlessTheDeadlineAnswered() {
        var book = ExecDeadlines(deadline: Self.deadline)
        func step<T>(_ body: (inout ExecDeadlines) -> T) -> T { body(&book) }
        _ = book.begin([Self.event(10, .allow), Self.event(11, .allow)], now: Self.at(0))
        #expect(step { $0.finish(DescriptorNumber(borrowing: 10), unplaced: true) })
        _ = book.answerOverdue(now: Self.at(1000))
        #expect(!step { $0.finish(DescriptorNumber(borrowing: 11), unplaced: true) }, "answered at the deadline: counted there")
        #expect(book.counters.unplaced == 1 && book.counters.allowedLate == 1)
    }

    @Test func aStuckAnsweringThreadIsCoveredFromItsDeadlineUntilItIsBack() {
        var book = ExecDeadlines(deadline: Self.deadline)
        func step<T>(_ body: (inout ExecDeadlines) -> T) -> T { body(&book) }
        _ = book.begin([Self.event(12, .refuse)], now: Self.at(0))
        #expect(!book.covering(now: Self.at(999)), "1 ms before the deadline the thread is busy, not stuck")
        #expect(book.covering(now: Self.at(1000)), "at the deadline new events are answered at once")
        book.answeredAtOnce(names: ["/usr/bin/x"], .refuse)
        book.answeredAtOnce(names: ["/usr/bin/y"], .allow)
        book.answeredAtOnce(names: [], .allow)
        #expect(book.counters.refusedLate == 1 && book.counters.allowedLate == 1, "an unlisted file's exec is not counted")
        #expect(step { $0.endBatch(now: Self.at(20_000)) }, "back after 20 s: late, the deadline thread looks again")
        #expect(!book.covering(now: Self.at(20_001)), "and stops covering")
        #expect(!step { $0.endBatch(now: Self.at(20_002)) }, "no batch under way")
    }

    @Test func theDeadlineThreadSleepsUntilTheNextDeadline() {
        var book = ExecDeadlines(deadline: Self.deadline)
        func step<T>(_ body: (inout ExecDeadlines) -> T) -> T { body(&book) }
        #expect(book.sleep(now: Self.at(0)) == nil, "no event: until woken")
        #expect(step { $0.begin([Self.event(13, .refuse)], now: Self.at(0)) })
        #expect(!step { $0.begin([Self.event(14, .allow)], now: Self.at(300)) }, "one waits already: its deadline is sooner, no wake needed")
        #expect(book.sleep(now: Self.at(0)) == .milliseconds(1001))
        #expect(book.sleep(now: MonotonicInstant(nanoseconds: Self.at(250).nanoseconds + 500_000)) == .milliseconds(751), "749.5 ms rounded up, and one more")
        #expect(step { $0.answerOverdue(now: Self.at(1000)) }.map(\.file) == [DescriptorNumber(borrowing: 13)], "only the first")
        #expect(book.sleep(now: Self.at(1000)) == .milliseconds(301), "then until the second's")
        #expect(step { $0.answerOverdue(now: Self.at(1299)) }.isEmpty)
        #expect(step { $0.answerOverdue(now: Self.at(1300)) }.map(\.allow) == [true])
        #expect(step { $0.begin([Self.event(15, .allow)], now: Self.at(1400)) }, "all answered: quiet again, the thread is woken")
    }

    /// The deadline thread's round, all of it decided at the one time it read at its wake-up.
    @Test func aWakeUpDecidesTheWholeRoundAtItsTime() {
        var book = ExecDeadlines(deadline: Self.deadline)
        func step<T>(_ body: (inout ExecDeadlines) -> T) -> T { body(&book) }
        _ = book.begin([Self.event(7, .refuse), Self.event(8, .allow)], now: Self.at(0))
        #expect(step { $0.wake(now: Self.at(500)) } == ExecDeadlines.Round(overdue: [], covering: false, sleep: .milliseconds(501)),
                "woken early: nothing due, it sleeps past the deadline")
        let due = step { $0.wake(now: Self.at(1000)) }
        #expect(Dictionary(uniqueKeysWithValues: due.overdue.map { ($0.file.raw, $0.allow) }) == [7: false, 8: true])
        #expect(due.covering && due.sleep == nil,
                "both answered at their deadline; the answering thread, still at them, is covered for; nothing left to time")
        #expect(step { $0.wake(now: Self.at(1001)) } == ExecDeadlines.Round(overdue: [], covering: true, sleep: nil), "answered once")
        #expect(step { $0.endBatch(now: Self.at(1200)) }, "it took the deadline or more: the deadline thread looks again")
        #expect(step { $0.wake(now: Self.at(1200)) } == ExecDeadlines.Round(overdue: [], covering: false, sleep: nil))
        #expect(book.counters.refusedLate == 1 && book.counters.allowedLate == 1)
    }
}
