import CLinux
import Cgroups
import Descriptors
import Facts
import Glibc
import Monotonic
import Plan
import Policy
import Synchronization
import WireGuardDevice
import ServiceSupport

/// route.executables and bypass.executables without a window: an exec of a listed file
/// waits in the kernel (fanotify FAN_OPEN_EXEC_PERM, ExecutableMarks marks the files) while
/// vpnd writes the process into its cgroup (cgroupfs, as ExecutableFollower moves: an exec
/// cannot wait for systemd's D-Bus round trip), then is allowed; the program's first
/// instruction runs in the cgroup, so its first connection already goes the declared way.
/// A bypass is for whom may bypass (ExecutableRules, with the real uid and groups the exec
/// was called with): anyone else's exec of a bypass.executables program is allowed where it
/// was started, counted and logged (BypassRefusals).
///
/// Answering must not depend on anything that can stall: events are read and answered on a
/// thread of their own, from a snapshot of the policy and the listed files' names (never the
/// event loop), and a second thread answers every event still waiting after
/// `answerDeadline` — however the first is stuck (the cgroup write blocking, the machine
/// overloaded) — and then answers new events at once until the first is back:
/// `route.executables` refused (EPERM: it does not run outside its tunnel),
/// `bypass.executables` allowed where it was started (inside its profile: the safe side;
/// exec events move it out afterwards, as they did before fanotify), logged and counted in
/// status. A vpnd that is stopped (SIGSTOP) answers nothing: its execs
/// of listed files wait, killably, until it runs again or is killed (under systemd its
/// watchdog, WatchdogSec=10s, aborts it); a vpnd that is gone has closed the group, and the
/// kernel allows every waiting and later exec unplaced. Only listed files are marked: no
/// other exec on the machine ever waits for vpnd.
final class ExecutableGuard: Sendable {
    /// How long an exec of a listed file waits for vpnd at most, beyond which it is
    /// answered unplaced. Placing takes tens of microseconds; a second of no progress is a
    /// stuck vpnd, not a busy one, and one second is what a user can wait for a program.
    static let answerDeadline: Swift.Duration = .seconds(1)

    /// What the answering thread decides from: published by the event loop when the policy
    /// or the files change.
    struct Snapshot: Sendable {
        var policy: Policy
        var parent: String
        var names: [ExecutableFile.Identity: [String]]
        /// Cgroups held for lack of their socket programs: nobody is placed there.
        var held: Set<String> = []
    }

    struct Counters: Sendable, Equatable {
        /// Processes placed before their program ran, by target ("work", or "bypass").
        var moves: [String: Int] = [:]
        /// Execs answered at the deadline: route.executables refused, bypass.executables allowed.
        var refusedLate = 0
        var allowedLate = 0
        /// Execs answered without a placement because the move failed.
        var unplaced = 0
    }

    private struct Shared {
        var snapshot: Snapshot?
        var deadlines = ExecDeadlines(deadline: answerDeadline)
    }

    private let group: FanotifyGroup
    private let hierarchy: CgroupHierarchy
    private let refusals: BypassRefusals
    private let log: Log
    private let shared = Mutex(Shared())
    /// Wakes the deadline thread (an eventfd).
    private let wake: FileDescriptor
    /// Test-only (VPND_TEST_EXEC_ANSWER_DELAY_MS): each event waits this long before it is
    /// decided, as a stuck vpnd would.
    private let testDelay: Swift.Duration

    init(group: FanotifyGroup, hierarchy: CgroupHierarchy, refusals: BypassRefusals, log: Log) throws {
        self.group = group
        self.hierarchy = hierarchy
        self.refusals = refusals
        self.log = log
        wake = try FileDescriptor("eventfd", returned: eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)))
        testDelay = ExecutableGuardTestDelay.delay(log: log)
    }

    /// Starts both threads. vpnd calls this after its signals are blocked (signalfd), its
    /// capabilities dropped and its sandbox applied: threads inherit all three.
    func start() {
        _ = LoopThread(name: "vpnd-exec") { [self] in answerLoop() }
        _ = LoopThread(name: "vpnd-exec-late") { [self] in deadlineLoop() }
    }

    func publish(_ snapshot: Snapshot) {
        shared.withLock { $0.snapshot = snapshot }
    }

    var counters: Counters { shared.withLock { $0.deadlines.counters } }

    // MARK: the answering thread

    /// The thread's edge: it reads the clock when it begins its events and when it is done.
    private func answerLoop() {
        var ready = pollfd(fd: group.fileDescriptor.raw, events: Int16(POLLIN), revents: 0)
        while true {
            if retryingInterrupted({ poll(&ready, 1, -1) }) < 0 {
                log.error("exec guard: \(SystemError("poll")); listed programs are answered at the deadline only")
                return
            }
            let events = group.read()
            guard !events.isEmpty else { continue }
            answer(events, now: .now())
            if shared.withLock({ $0.deadlines.endBatch(now: .now()) }) { signalDeadlineThread() }
        }
    }

    private func answer(_ events: [FanotifyGroup.Event], now: MonotonicInstant) {
        let identities = events.map { Self.identity(of: $0.file.number) }
        let (snapshot, wasQuiet) = shared.withLock { state in
            let begun = zip(events, identities).map { event, identity in
                let names = identity.flatMap { state.snapshot?.names[$0] } ?? []
                let late = state.snapshot.map { ExecutableRules.lateAnswer(executables: names, policy: $0.policy) } ?? .allow
                return ExecDeadlines.Event(file: event.file.number, pid: event.pid, names: names, lateAnswer: late)
            }
            return (state.snapshot, state.deadlines.begin(begun, now: now))
        }
        if wasQuiet { signalDeadlineThread() }
        for (event, identity) in zip(events, identities) {
            if testDelay > .zero { Self.sleep(testDelay) }
            place(event, names: identity.flatMap { snapshot?.names[$0] } ?? [], snapshot: snapshot)
        }
    }

    /// Decides, moves and answers one event.
    private func place(_ event: FanotifyGroup.Event, names: [String], snapshot: Snapshot?) {
        // Not a listed file's exec (a mark removed meanwhile), or a process outside vpnd's
        // pid namespace, which vpnd cannot place (nor see with the process connector).
        guard let snapshot, event.isExecPermission, !names.isEmpty, event.pid > 0 else {
            finish(event, allow: true)
            return
        }
        let late = ExecutableRules.lateAnswer(executables: names, policy: snapshot.policy)
        // Held first, so that what is read about the process below (its cgroup, its user) is
        // its own if the move still finds it alive.
        guard let process = try? ProcessHandle.open(pid: event.pid), let cgroup = CgroupHierarchy.cgroup(ofProcess: event.pid) else {
            finish(event, allow: late == .allow, unplaced: true)
            return
        }
        // The exec waits, so these are the credentials it was called with (a set-user-ID
        // program's are not yet in force).
        var user: Credentials?
        guard let decision = ExecutableRules.decide(executables: names, cgroup: cgroup, policy: snapshot.policy, parent: snapshot.parent,
                                                    user: { user = ProcessDetails.credentials(of: event.pid); return user }) else {
            finish(event, allow: true)
            return
        }
        // A bypass its user may not take: the exec runs where it was started, in the tunnel.
        // Counted while the exec waits (the process is there to be named), logged after.
        if case let .bypassRefused(profile, program, rule) = decision {
            let said = process.isAlive ? refusals.record(pid: event.pid, user: user, profile: profile, program: program, rule: rule) : nil
            finish(event, allow: true)
            if let said { log.notice(said) }
            return
        }
        // Answered at the deadline already (this thread was stuck): the exec went on, or
        // was refused, without us; the process connector places what did run.
        guard !isAnswered(event.file.number) else {
            finish(event, allow: true)
            return
        }
        guard let placement = ExecPlacement(decision, policy: snapshot.policy, parent: snapshot.parent) else {
            finish(event, allow: true)
            return
        }
        let (target, label) = (placement.target, placement.label)
        let program = names.joined(separator: ", ")
        let placed: String
        do {
            guard !UnguardedRules.holds(target, in: snapshot.held) else { throw HeldCgroup() }
            placed = try hierarchy.place(process, in: target)
        } catch {
            log.warning("pid \(event.pid) executes \(program) but could not be moved into \(target): \(error); "
                        + (late == .refuse ? "the exec is refused" : "it runs where it was started"))
            finish(event, allow: late == .allow, unplaced: true)
            return
        }
        if finish(event, allow: true) || late == .allow {
            shared.withLock { $0.deadlines.moved(label) }
            log.info("pid \(event.pid) executes \(program): moved from \(cgroup.isEmpty ? "the root cgroup" : cgroup) into \(placed) before it runs")
        } else {
            // The deadline refused the exec while the move was under way: the process still
            // runs its previous program, which belongs where it was.
            try? hierarchy.move(pid: event.pid, to: cgroup)
        }
    }

    private func isAnswered(_ file: DescriptorNumber) -> Bool {
        shared.withLock { $0.deadlines.isAnswered(file) }
    }

    /// Answers (unless the deadline did); true if answered here. The event's file closes
    /// with the event.
    @discardableResult
    private func finish(_ event: FanotifyGroup.Event, allow: Bool, unplaced: Bool = false) -> Bool {
        let file = event.file.number
        return shared.withLock { state -> Bool in
            guard state.deadlines.finish(file, unplaced: unplaced) else { return false }
            group.respond(file, allow: allow)
            return true
        }
    }

    // MARK: the deadline thread

    /// The thread's edge: it reads the clock once at each wake-up, and every decision of the
    /// round (what is overdue, whether to cover, how long to sleep) is made at that time.
    private func deadlineLoop() {
        while true {
            let now = MonotonicInstant.now()
            let round = shared.withLock { state in
                let round = state.deadlines.wake(now: now)
                for event in round.overdue { group.respond(event.file, allow: event.allow) }
                return round
            }
            for event in round.overdue { logLate(pid: event.waiting.pid, names: event.waiting.names, answer: event.waiting.lateAnswer) }
            if round.covering { coverForStuckThread(now: now) }
            var fds = [pollfd(fd: wake.raw, events: Int16(POLLIN), revents: 0)]
            if round.covering { fds.append(pollfd(fd: group.fileDescriptor.raw, events: Int16(POLLIN), revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), round.sleep.map { Int32(clamping: $0.nanoseconds / 1_000_000) } ?? -1)
            var count: UInt64 = 0
            _ = read(wake.raw, &count, 8)
        }
    }

    /// While the answering thread is stuck past the deadline (as at `now`: until it ends its
    /// batch), new events are answered here at once, as they would be at their deadline.
    private func coverForStuckThread(now: MonotonicInstant) {
        while shared.withLock({ $0.deadlines.covering(now: now) }) {
            let events = group.read()
            if events.isEmpty { return }
            for event in events {
                let identity = Self.identity(of: event.file.number)
                let (names, answer) = shared.withLock { state -> ([String], ExecutableRules.LateAnswer) in
                    let names = identity.flatMap { state.snapshot?.names[$0] } ?? []
                    let answer = state.snapshot.map { ExecutableRules.lateAnswer(executables: names, policy: $0.policy) } ?? .allow
                    state.deadlines.answeredAtOnce(names: names, answer)
                    return (names, answer)
                }
                group.respond(event.file.number, allow: answer == .allow)
                if !names.isEmpty { logLate(pid: event.pid, names: names, answer: answer) }
            }
        }
    }

    private func logLate(pid: Int32, names: [String], answer: ExecutableRules.LateAnswer) {
        let seconds = Self.answerDeadline.secondsText
        switch answer {
        case .refuse:
            log.warning("exec of \(names.joined(separator: ", ")) by pid \(pid) not placed within \(seconds) s: refused (a route.executables program does not run outside its tunnel)")
        case .allow:
            log.warning("exec of \(names.joined(separator: ", ")) by pid \(pid) not placed within \(seconds) s: allowed where it was started (a bypass.executables program stays in its tunnel)")
        }
    }

    private func signalDeadlineThread() {
        var one: UInt64 = 1
        _ = write(wake.raw, &one, 8)
    }

    private static func identity(of file: DescriptorNumber) -> ExecutableFile.Identity? {
        var info = stat()
        guard fstat(file.raw, &info) == 0 else { return nil }
        return ExecutableFile.Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    private static func sleep(_ span: Swift.Duration) {
        let nanoseconds = span.nanoseconds
        var duration = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var left = timespec()
        _ = retryingInterrupted {
            let result = nanosleep(&duration, &left)
            // Interrupted, it sleeps on for what was left.
            duration = left
            return result
        }
    }
}

/// A placement refused because its cgroup lacks its socket programs (as of the last apply).
private struct HeldCgroup: Error, CustomStringConvertible {
    var description: String { "it is held: the kernel does not have its socket programs" }
}

private extension Swift.Duration {
    /// Seconds as the log says them: "1" rather than "1.0", "0.25".
    var secondsText: String {
        let milliseconds = nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? String(milliseconds / 1000) : String(Double(milliseconds) / 1000)
    }
}
