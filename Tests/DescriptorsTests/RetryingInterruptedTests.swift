import Descriptors
import Glibc
import Synchronization
import Testing

/// Signals caught by the handler the tests install.
private let caught = Atomic<Int>(0)

/// A thread that sends SIGUSR2 to the test's thread every 2 ms until it has made `calls`
/// calls (or 2 s passed), then writes one byte to the pipe the test reads, so that the
/// read ends whatever happened.
private final class Interrupter: Sendable {
    let target: pthread_t
    let pipeInput: Int32
    let wanted: Int
    let calls = Atomic<Int>(0)
    let done = Atomic<Bool>(false)

    init(target: pthread_t, pipeInput: Int32, wanted: Int) {
        self.target = target
        self.pipeInput = pipeInput
        self.wanted = wanted
    }

    func run() {
        var sent = 0
        while !done.load(ordering: .acquiring), calls.load(ordering: .acquiring) < wanted, sent < 1000 {
            pthread_kill(target, SIGUSR2)
            sent += 1
            usleep(2000)
        }
        var byte: UInt8 = 42
        _ = write(pipeInput, &byte, 1)
    }
}

@Suite(.serialized) struct RetryingInterruptedTests {
    /// Runs `body` with SIGUSR2 caught by a handler installed without SA_RESTART (so that a
    /// blocking read it interrupts fails with EINTR) and an interrupter aimed at this thread;
    /// the handler and this thread's signal mask before are put back.
    private static func interrupting<R>(wanted: Int, _ body: (_ read: Int32, _ interrupter: Interrupter) -> R) throws -> R {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in caught.add(1, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        try #require(sigaction(SIGUSR2, &action, &previous) == 0)
        defer { sigaction(SIGUSR2, &previous, nil) }
        // The test runner's threads block signals; this one takes SIGUSR2 while the test runs.
        var unblocked = sigset_t(), mask = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGUSR2)
        try #require(pthread_sigmask(SIG_UNBLOCK, &unblocked, &mask) == 0)
        defer { pthread_sigmask(SIG_SETMASK, &mask, nil) }
        let interrupter = Interrupter(target: pthread_self(), pipeInput: ends[1], wanted: wanted)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(interrupter).toOpaque()
        try #require(pthread_create(&thread, nil, { context in
            Unmanaged<Interrupter>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context) == 0)
        let result = body(ends[0], interrupter)
        interrupter.done.store(true, ordering: .releasing)
        pthread_join(thread, nil)
        return result
    }

    /// The control: the signal does end a blocking read with EINTR, as the kernel does
    /// when the handler was installed without SA_RESTART.
    @Test func aSignalEndsABlockingReadWithEINTR() throws {
        let before = caught.load(ordering: .relaxed)
        let (count, code) = try Self.interrupting(wanted: .max) { input, _ -> (Int, Int32) in
            var byte: UInt8 = 0
            let count = read(input, &byte, 1)
            return (count, errno)
        }
        #expect(count == -1 && code == EINTR, "read returned \(count), errno \(code)")
        #expect(caught.load(ordering: .relaxed) > before)
    }

    /// The same read through `retryingInterrupted` is made again after each EINTR and gets
    /// the byte.
    @Test func anInterruptedReadIsMadeAgainAndGetsTheByte() throws {
        let before = caught.load(ordering: .relaxed)
        let (count, byte, calls) = try Self.interrupting(wanted: 2) { input, interrupter -> (Int, UInt8, Int) in
            var byte: UInt8 = 0
            let count = retryingInterrupted {
                interrupter.calls.add(1, ordering: .releasing)
                return read(input, &byte, 1)
            }
            return (count, byte, interrupter.calls.load(ordering: .relaxed))
        }
        #expect(count == 1 && byte == 42)
        #expect(calls >= 2, "the read was never interrupted")
        #expect(caught.load(ordering: .relaxed) > before)
    }

    /// Any other failure is returned at once, with its errno.
    @Test func anotherFailureIsReturnedAtOnce() {
        var calls = 0
        var byte: UInt8 = 0
        let count = retryingInterrupted {
            calls += 1
            return read(-1, &byte, 1)
        }
        let code = errno
        #expect(count == -1 && code == EBADF && calls == 1)
    }
}
