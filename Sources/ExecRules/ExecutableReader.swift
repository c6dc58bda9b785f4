import CCap
import CLinux
import Descriptors
import Glibc
import ServiceSupport
import Applying

/// vpnd's process inspector: which program a process runs (/proc/PID/exe), and which
/// processes hold a TUN device and with which sockets (TunnelHolders). vpnd cannot look
/// itself: /proc/PID/exe and /proc/PID/fd are guarded like ptrace, which needs
/// CAP_SYS_PTRACE for other users' processes and for root's privileged ones, and vpnd's
/// Landlock domain forbids it for every process outside it. So vpnd forks, before it
/// confines itself, a helper that keeps CAP_SYS_PTRACE and nothing else, has no_new_privs,
/// and dies with vpnd. Its seccomp filter (CLinux/inspector.h) lets it read requests from
/// vpnd and answer on that one socket, read links, list directories (opened read-only as
/// directories: no file's contents), and copy another process's descriptor only to ask a
/// TUN device its name; not even ptrace itself. A vpnd taken over can learn which program
/// a process runs, which processes hold TUN devices, and the names of any directory's
/// entries and any link's target; nothing more.
public final class ExecutableReader {
    private let socket: FileDescriptor
    public let pid: Int32

    /// Forks the helper. Call while vpnd is still single-threaded and privileged.
    init() throws {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw SystemError("socketpair")
        }
        let mine = FileDescriptor(adopting: ends[0]), helpers = FileDescriptor(adopting: ends[1])
        let parent = getpid()
        let child = fork()
        guard child >= 0 else { throw SystemError("fork") }
        if child == 0 {
            mine.close()
            Self.serve(helpers.release(), parent: parent)
        }
        helpers.close()
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(mine.raw, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(mine.raw, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        socket = mine
        pid = child
    }

    deinit {
        // The helper reads the end of its requests and exits; the descriptor closes with
        // this reader.
        shutdown(socket.raw, Int32(SHUT_RDWR))
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// Throws unless the helper answers: it dies at start when it cannot keep
    /// CAP_SYS_PTRACE (a capability bound without it, such as vpnd.service's), and then no
    /// program could ever be named. Asks for vpnd's own program.
    func check() throws {
        guard executable(of: getpid()) != nil else {
            throw ApplyError.capabilityNotKept(process: "the helper that reads /proc/PID/exe", capability: "CAP_SYS_PTRACE")
        }
    }

    /// The path of the program `pid` runs, or nil (a kernel thread, a process gone).
    public func executable(of pid: Int32) -> String? {
        guard pid > 0, let bytes = answer(to: pid), !bytes.isEmpty, bytes.count <= 4096 else { return nil }
        let path = String(decoding: bytes, as: UTF8.self)
        // A program replaced or removed since it started reads "PATH (deleted)".
        return path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
    }

    /// The helper's answer to one request (vx_inspector_loop): nil when it did not answer
    /// (gone, or slower than the socket's timeout), empty when it had nothing to say. Each
    /// answer starts with the request it answers: one that came too late for an earlier
    /// request is skipped, never taken for the answer to this one.
    public func answer(to request: Int32) -> [UInt8]? {
        var asked = request
        // A helper that died (it could not keep CAP_SYS_PTRACE) must not take vpnd with it.
        guard send(socket.raw, &asked, 4, Int32(MSG_NOSIGNAL)) == 4 else { return nil }
        for _ in 0..<16 {
            var echo: Int32 = 0, length: UInt32 = 0
            guard readExactly(&echo, 4), readExactly(&length, 4), length <= 1 << 16 else { return nil }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            if length > 0 {
                guard bytes.withUnsafeMutableBytes({ readExactly($0.baseAddress!, $0.count) }) else { return nil }
            }
            if echo == request { return bytes }
        }
        return nil
    }

    private func readExactly(_ buffer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        var received = 0
        while received < count {
            let n = read(socket.raw, buffer + received, count - received)
            guard n > 0 else { return false }
            received += n
        }
        return true
    }

    /// The helper's whole life; never returns.
    private static func serve(_ socket: Int32, parent: pid_t) -> Never {
        _ = vx_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(0) }
        FileDescriptor.closeInherited(keeping: socket)
        do {
            try Privileges.dropToMinimum(effective: [CAP_SYS_PTRACE], permitted: [CAP_SYS_PTRACE])
        } catch {
            _exit(1)
        }
        guard vx_seccomp_inspector(socket) == 0 else { _exit(1) }
        vx_inspector_loop(socket)
        _exit(0)
    }
}
