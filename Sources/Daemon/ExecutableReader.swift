import CCap
import CLinux
import Glibc

/// Which program a process runs (/proc/PID/exe), asked of a helper process. vpnd cannot
/// read that link itself: it is guarded like ptrace, which needs CAP_SYS_PTRACE for other
/// users' processes and for root's privileged ones, and vpnd's Landlock domain forbids it
/// for every process outside it. So vpnd forks, before it confines itself, a helper that
/// keeps CAP_SYS_PTRACE and nothing else, has no_new_privs, and under a seccomp filter can
/// only read a pid from vpnd, read that one link and answer (not even ptrace itself); it
/// dies with vpnd. A vpnd taken over can learn which program a process runs, nothing more.
final class ExecutableReader {
    private let socket: Int32
    let pid: Int32

    /// Forks the helper. Call while vpnd is still single-threaded and privileged.
    init() throws {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw ApplyError("socketpair: \(String(cString: strerror(errno)))")
        }
        let parent = getpid()
        let child = fork()
        guard child >= 0 else { throw ApplyError("fork: \(String(cString: strerror(errno)))") }
        if child == 0 {
            close(ends[0])
            Self.serve(ends[1], parent: parent)
        }
        close(ends[1])
        socket = ends[0]
        pid = child
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(socket)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// Throws unless the helper answers: it dies at start when it cannot keep
    /// CAP_SYS_PTRACE (a capability bound without it, such as vpnd.service's), and then no
    /// program could ever be named. Asks for vpnd's own program.
    func check() throws {
        guard executable(of: getpid()) != nil else {
            throw ApplyError("the helper that reads /proc/PID/exe could not keep CAP_SYS_PTRACE (not in vpnd's capability bound)")
        }
    }

    /// The path of the program `pid` runs, or nil (a kernel thread, a process gone).
    func executable(of pid: Int32) -> String? {
        var request = pid
        // MSG_NOSIGNAL: a helper that died must not take vpnd with it (SIGPIPE).
        guard send(socket, &request, 4, Int32(MSG_NOSIGNAL)) == 4 else { return nil }
        var length: UInt32 = 0
        guard read(socket, &length, 4) == 4, length > 0, length <= 4096 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        var received = 0
        while received < bytes.count {
            let count = bytes[received...].withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            received += count
        }
        let path = String(decoding: bytes, as: UTF8.self)
        // A program replaced or removed since it started reads "PATH (deleted)".
        return path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
    }

    /// The helper's whole life; never returns.
    private static func serve(_ socket: Int32, parent: pid_t) -> Never {
        _ = vx_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(0) }
        for fd in 0..<Int32(4096) where fd != socket && fd > 2 { close(fd) }
        do {
            try Privileges.dropToMinimum(effective: [CAP_SYS_PTRACE], permitted: [CAP_SYS_PTRACE])
        } catch {
            _exit(1)
        }
        guard vx_seccomp_reader_only() == 0 else { _exit(1) }
        vx_executable_reader_loop(socket)
        _exit(0)
    }
}
