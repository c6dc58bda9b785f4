import Descriptors
import Monotonic
import Plan

/// The exec guard's clock, as a value: the execs of listed files held in the kernel, each
/// with the deadline by which it is answered whatever happens, and since when the answering
/// thread has been at its events (past the deadline it is stuck, and new events are answered
/// at once). Time is an argument of every decision, so tests step it in milliseconds; the
/// guard's two threads read the clock and keep this under their lock.
struct ExecDeadlines: Sendable {
    /// How long an exec waits at most.
    let deadline: Swift.Duration

    struct Waiting: Sendable, Equatable {
        var deadline: MonotonicInstant
        var lateAnswer: ExecutableRules.LateAnswer
        var answered = false
        var pid: Int32
        var names: [String]
    }

    /// An event the answering thread read: its file, its process, the listed names of its
    /// file and the answer it gets if the deadline comes first.
    struct Event: Sendable {
        var file: DescriptorNumber
        var pid: Int32
        var names: [String]
        var lateAnswer: ExecutableRules.LateAnswer
    }

    /// An event the deadline answered: to respond with `allow`, and to log.
    struct Overdue: Sendable, Equatable {
        var file: DescriptorNumber
        var waiting: Waiting
        var allow: Bool { waiting.lateAnswer == .allow }
    }

    /// Events read and not yet answered by the answering thread, by their file descriptor
    /// (an event answered at its deadline stays, `answered`, until that thread is done with it).
    private(set) var waiting: [DescriptorNumber: Waiting] = [:]
    /// When the answering thread began the events it holds.
    private(set) var busySince: MonotonicInstant?
    private(set) var counters = ExecutableGuard.Counters()

    init(deadline: Swift.Duration) {
        self.deadline = deadline
    }

    /// The answering thread begins `events` at `now`. True when nothing was waiting
    /// unanswered before: the deadline thread sleeps without a deadline and must be woken.
    mutating func begin(_ events: [Event], now: MonotonicInstant) -> Bool {
        let quiet = !waiting.values.contains { !$0.answered }
        for event in events {
            waiting[event.file] = Waiting(deadline: now + deadline, lateAnswer: event.lateAnswer, pid: event.pid, names: event.names)
        }
        busySince = now
        return quiet
    }

    /// The answering thread is done with its events. True when it took the deadline or more:
    /// the deadline thread, which answered new events at once meanwhile, must look again.
    mutating func endBatch(now: MonotonicInstant) -> Bool {
        defer { busySince = nil }
        return busySince.map { now.since($0) >= deadline } ?? false
    }

    /// Whether the deadline answered the event already.
    func isAnswered(_ file: DescriptorNumber) -> Bool {
        waiting[file]?.answered ?? false
    }

    /// The answering thread is done with the event of `file`. True when it is to answer it
    /// (the deadline did not); `unplaced`: it is answered without a placement.
    mutating func finish(_ file: DescriptorNumber, unplaced: Bool = false) -> Bool {
        guard let held = waiting.removeValue(forKey: file), !held.answered else { return false }
        if unplaced { counters.unplaced += 1 }
        return true
    }

    /// A move counted: the process is in `label`'s cgroup before its program runs.
    mutating func moved(_ label: String) {
        counters.moves[label, default: 0] += 1
    }

    /// Every event whose deadline has come by `now`, answered here (route.executables
    /// refused, bypass.executables allowed) and counted.
    mutating func answerOverdue(now: MonotonicInstant) -> [Overdue] {
        var overdue: [Overdue] = []
        for (file, held) in waiting.sorted(by: { $0.value.deadline < $1.value.deadline }) where !held.answered && held.deadline <= now {
            waiting[file]?.answered = true
            count(held.lateAnswer)
            overdue.append(Overdue(file: file, waiting: held))
        }
        return overdue
    }

    /// What the deadline thread does at a wake-up, all decided at its one time: the events
    /// it answers, whether it answers new events at once (the answering thread is stuck),
    /// and how long it then sleeps.
    struct Round: Sendable, Equatable {
        var overdue: [Overdue]
        var covering: Bool
        var sleep: Swift.Duration?
    }

    /// The deadline thread's wake-up at `now`: every event due is answered (marked), and
    /// the rest of the round decided at the same time.
    mutating func wake(now: MonotonicInstant) -> Round {
        let overdue = answerOverdue(now: now)
        return Round(overdue: overdue, covering: covering(now: now), sleep: sleep(now: now))
    }

    /// Whether the answering thread has been at its events for the deadline or more: new
    /// events are answered at once, as they would be at their deadline.
    func covering(now: MonotonicInstant) -> Bool {
        busySince.map { now.since($0) >= deadline } ?? false
    }

    /// An event answered at once while covering; a file no rule lists is not counted.
    mutating func answeredAtOnce(names: [String], _ answer: ExecutableRules.LateAnswer) {
        if !names.isEmpty { count(answer) }
    }

    /// How long the deadline thread may sleep: until the next deadline, rounded up to the
    /// millisecond poll counts in, and one more so that it wakes past it; nil: until woken.
    func sleep(now: MonotonicInstant) -> Swift.Duration? {
        waiting.values.filter { !$0.answered }.map(\.deadline).min().map { next in
            .milliseconds((next.since(now).nanoseconds + 999_999) / 1_000_000 + 1)
        }
    }

    private mutating func count(_ answer: ExecutableRules.LateAnswer) {
        if answer == .allow { counters.allowedLate += 1 } else { counters.refusedLate += 1 }
    }
}
