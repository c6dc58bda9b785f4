import Descriptors
import Glibc
import ServiceSupport
import WireGuardDevice

/// Into the background, as wireguard-go goes without -f. wg-quick runs `IMPL IFACE` and
/// carries on (`wg setconf`, `ip address add`) once it returns, so the interface and the
/// `wg` socket exist before the parent exits; the child serves them.
enum Background {
    /// Forks: the parent exits 0 at once; the child returns, in a session of its own, with
    /// standard input and output on /dev/null and standard error too unless it may stay,
    /// and without the descriptors it was started with (`inherited`). Call it while the
    /// process has one thread (before the tunnel starts): fork copies only that thread.
    static func detach(keepingStandardError: Bool, closing inherited: [Int32]) throws {
        let pid = fork()
        guard pid >= 0 else { throw SystemError("fork") }
        // _exit: no deinit may run in the parent, whose copy of the tunnel would remove the
        // `wg` socket the child serves.
        if pid > 0 { _exit(0) }
        _ = setsid()
        _ = chdir("/")
        let null = try FileDescriptor.open("/dev/null", O_RDWR)
        for target in keepingStandardError ? [0, 1] : [0, 1, 2] { dup2(null.raw, Int32(target)) }
        null.close()
        // Found in /proc/self/fd and never otherwise owned: adopted here only to be closed.
        for fd in inherited { FileDescriptor(adopting: fd).close() }
    }

    /// The descriptors above standard error that the process was started with, before it
    /// opened any of its own. A background engine must not keep them: whoever started
    /// wg-quick may be waiting for the last holder of one to close it (a pipe, or the
    /// socket Foundation's Process uses to notice that its child has ended).
    static func inheritedDescriptors() -> [Int32] {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var found: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let fd = Int32(name), fd > 2, fd != own { found.append(fd) }
        }
        return found
    }

    /// Standard error stays where wireguard-go keeps it, when LOG_LEVEL asks for a log
    /// (and is not "silent"), and when it is the journal (systemd names it in
    /// JOURNAL_STREAM): wg-quick@.service then has the engine's log. Anything else, a pipe
    /// above all, goes to /dev/null: whoever reads wg-quick's output to its end would
    /// otherwise wait for the engine to exit.
    static func keepsStandardError() -> Bool {
        if let level = environment("LOG_LEVEL"), !level.isEmpty, level != "silent" { return true }
        return Log.standardErrorIsJournal()
    }

    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
