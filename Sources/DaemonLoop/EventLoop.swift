import CLinux
import Descriptors
import Glibc
import Monotonic
import Names

/// vpnd's one thread: descriptors registered with their handlers, and timers. Handlers
/// run one at a time in the loop, so daemon state needs no locks; nothing in a handler
/// may block (writes are queued and sent when the descriptor is writable).
///
/// The descriptors are registered with epoll, level-triggered (poll()'s meaning, and its
/// event bits, which epoll shares): a wake costs what is ready, not what is watched. With
/// 64 profiles vpnd watches some 420 descriptors (a proxy's four sockets a profile), and
/// poll() scanned them all at every wake (bench/README).
public final class EventLoop {
    public typealias Handler = (_ events: Int16) -> Void

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
    public private(set) var running = false
    private let epoll: FileDescriptor
    /// epoll_wait's buffer: more ready at once are handled in the next round.
    private var ready = [epoll_event](repeating: epoll_event(), count: 64)

    public init() {
        // Without an epoll descriptor vpnd cannot run at all (EMFILE or ENOMEM at start).
        let raw = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(raw >= 0, SystemError("epoll_create1").description)
        epoll = FileDescriptor(adopting: raw)
    }

    /// Calls `handler` with the revents whenever `fd` is ready for `events`. The loop owns
    /// no descriptor: the owner unwatches before it closes (a descriptor closed first leaves
    /// epoll by itself; its handler stays until unwatched).
    public func watch(_ fd: DescriptorNumber, events: Int16 = Int16(POLLIN), _ handler: @escaping Handler) {
        let known = sources[fd] != nil
        sources[fd] = Source(events: events, handler: handler)
        register(fd, events, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD)
    }

    public func watch(_ fd: borrowing FileDescriptor, events: Int16 = Int16(POLLIN), _ handler: @escaping Handler) {
        watch(fd.number, events: events, handler)
    }

    public func setEvents(_ fd: DescriptorNumber, _ events: Int16) {
        guard sources[fd] != nil, sources[fd]?.events != events else { return }
        sources[fd]?.events = events
        register(fd, events, EPOLL_CTL_MOD)
    }

    public func unwatch(_ fd: DescriptorNumber) {
        guard sources.removeValue(forKey: fd) != nil else { return }
        var none = epoll_event()
        // ENOENT or EBADF: closed already, and so out of epoll.
        _ = epoll_ctl(epoll.raw, EPOLL_CTL_DEL, fd.raw, &none)
    }

    /// poll()'s event bits are epoll's. A descriptor that was closed and whose number came
    /// back is not in epoll any more: MOD fails with ENOENT, and it is added; one added
    /// while its old self was still open (EEXIST) is modified.
    private func register(_ fd: DescriptorNumber, _ events: Int16, _ operation: Int32) {
        var event = epoll_event()
        event.events = UInt32(UInt16(bitPattern: events))
        event.data.fd = fd.raw
        guard epoll_ctl(epoll.raw, operation, fd.raw, &event) != 0 else { return }
        let retry = errno == ENOENT ? EPOLL_CTL_ADD : errno == EEXIST ? EPOLL_CTL_MOD : nil
        if let retry, epoll_ctl(epoll.raw, retry, fd.raw, &event) == 0 { return }
        // A descriptor epoll cannot watch (a regular file, EPERM) or one already closed
        // (EBADF): its handler would never run, which is a bug of the caller.
        assertionFailure(SystemError("epoll_ctl \(fd)").description)
    }

    public func unwatch(_ fd: borrowing FileDescriptor) {
        unwatch(fd.number)
    }

    /// Runs `body` every `interval`, first after one interval.
    @discardableResult
    public func every(_ interval: Swift.Duration, _ body: @escaping () -> Void) -> Int {
        add(Timer(due: .now() + interval, interval: interval, body: body))
    }

    /// Runs `body` once, after `delay` (at once, in the next round, when it is not positive).
    @discardableResult
    public func after(_ delay: Swift.Duration, _ body: @escaping () -> Void) -> Int {
        add(Timer(due: .now() + delay, interval: nil, body: body))
    }

    public func cancel(_ timer: Int) { timers[timer] = nil }

    private func add(_ timer: Timer) -> Int {
        nextTimer += 1
        timers[nextTimer] = timer
        return nextTimer
    }

    public func stop() { running = false }

    public func run() throws {
        running = true
        while running {
            let now = MonotonicInstant.now()
            let wait = timers.values.map { $0.due.since(now) }.min() ?? .seconds(1)
            let count = retryingInterrupted { epoll_wait(epoll.raw, &ready, Int32(ready.count), Int32(min(wait, .seconds(1)).nanoseconds / 1_000_000) + 1) }
            if count < 0 { throw SystemError("epoll_wait") }
            for entry in ready.prefix(max(0, Int(count))) where running {
                // A handler may have removed (and closed) another source in this round.
                sources[DescriptorNumber(borrowing: entry.data.fd)]?.handler(Int16(truncatingIfNeeded: entry.events))
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

/// The varlink servers of Names run on this loop.
extension EventLoop: NameServerLoop {}
