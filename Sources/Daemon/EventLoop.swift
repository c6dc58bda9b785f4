import Descriptors
import Glibc
import Monotonic

/// vpnd's one thread: descriptors registered with their handlers, and timers. Handlers
/// run one at a time in the loop, so daemon state needs no locks; nothing in a handler
/// may block (writes are queued and sent when the descriptor is writable).
final class EventLoop {
    typealias Handler = (_ events: Int16) -> Void

    private struct Source {
        var events: Int16
        var handler: Handler
    }

    private struct Timer {
        var due: MonotonicInstant
        var interval: Swift.Duration?
        var body: () -> Void
    }

    private var sources: [DescriptorNumber: Source] = [:]
    private var timers: [Int: Timer] = [:]
    private var nextTimer = 0
    private(set) var running = false

    /// Calls `handler` with the revents whenever `fd` is ready for `events`. The loop owns
    /// no descriptor: the owner unwatches before it closes.
    func watch(_ fd: DescriptorNumber, events: Int16 = Int16(POLLIN), _ handler: @escaping Handler) {
        sources[fd] = Source(events: events, handler: handler)
    }

    func watch(_ fd: borrowing FileDescriptor, events: Int16 = Int16(POLLIN), _ handler: @escaping Handler) {
        watch(fd.number, events: events, handler)
    }

    func setEvents(_ fd: DescriptorNumber, _ events: Int16) {
        sources[fd]?.events = events
    }

    func unwatch(_ fd: DescriptorNumber) {
        sources[fd] = nil
    }

    func unwatch(_ fd: borrowing FileDescriptor) {
        unwatch(fd.number)
    }

    /// Runs `body` every `interval`, first after one interval.
    @discardableResult
    func every(_ interval: Swift.Duration, _ body: @escaping () -> Void) -> Int {
        add(Timer(due: .now() + interval, interval: interval, body: body))
    }

    /// Runs `body` once, after `delay` (at once, in the next round, when it is not positive).
    @discardableResult
    func after(_ delay: Swift.Duration, _ body: @escaping () -> Void) -> Int {
        add(Timer(due: .now() + delay, interval: nil, body: body))
    }

    func cancel(_ timer: Int) { timers[timer] = nil }

    private func add(_ timer: Timer) -> Int {
        nextTimer += 1
        timers[nextTimer] = timer
        return nextTimer
    }

    func stop() { running = false }

    func run() throws {
        running = true
        while running {
            let now = MonotonicInstant.now()
            let wait = timers.values.map { $0.due.since(now) }.min() ?? .seconds(1)
            var fds = sources.map { pollfd(fd: $0.key.raw, events: $0.value.events, revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(wait, .seconds(1)).nanoseconds / 1_000_000) + 1)
            if ready < 0 && errno != EINTR { throw ApplyError(SystemError("poll").description) }
            for entry in fds where entry.revents != 0 && running {
                // A handler may have removed (and closed) another source in this round.
                sources[DescriptorNumber(borrowing: entry.fd)]?.handler(entry.revents)
            }
            let after = MonotonicInstant.now()
            for (id, timer) in timers.sorted(by: { $0.value.due < $1.value.due }) where timer.due <= after && running {
                if let interval = timer.interval {
                    timers[id]?.due = after + interval
                } else {
                    timers[id] = nil
                }
                timer.body()
            }
        }
    }
}
