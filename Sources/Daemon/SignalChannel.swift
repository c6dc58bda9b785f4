import CLinux
import Glibc

/// Signals as readable events for the poll loop (signalfd), so handlers run in the loop
/// and not in signal context.
final class SignalChannel {
    let fileDescriptor: Int32

    init(_ signals: [Int32]) throws {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        guard sigprocmask(SIG_BLOCK, &set, nil) == 0 else { throw ApplyError("sigprocmask: \(String(cString: strerror(errno)))") }
        fileDescriptor = signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        guard fileDescriptor >= 0 else { throw ApplyError("signalfd: \(String(cString: strerror(errno)))") }
        signal(SIGPIPE, SIG_IGN)
    }

    deinit { close(fileDescriptor) }

    func read() -> [Int32] {
        var received: [Int32] = []
        var info = signalfd_siginfo()
        while Glibc.read(fileDescriptor, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
            received.append(Int32(info.ssi_signo))
        }
        return received
    }
}
