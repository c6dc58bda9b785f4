import CLinux
import Descriptors
import Glibc

/// Signals as readable events for the poll loop (signalfd), so handlers run in the loop
/// and not in signal context.
public final class SignalChannel {
    public let fileDescriptor: FileDescriptor

    public init(_ signals: [Int32]) throws(SystemError) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        guard sigprocmask(SIG_BLOCK, &set, nil) == 0 else { throw SystemError("sigprocmask") }
        fileDescriptor = try Self.signalDescriptor(set)
        signal(SIGPIPE, SIG_IGN)
    }

    private static func signalDescriptor(_ set: sigset_t) throws(SystemError) -> FileDescriptor {
        var set = set
        return try FileDescriptor("signalfd", returned: signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC)))
    }

    public func read() -> [Int32] {
        var received: [Int32] = []
        var info = signalfd_siginfo()
        while Glibc.read(fileDescriptor.raw, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
            received.append(Int32(info.ssi_signo))
        }
        return received
    }
}
