import Descriptors
import Glibc
import Applying

/// One vpnd per network namespace: two would replace each other's table and fight over
/// rules and routes. The lock is a file named after the namespace (its inode) in
/// /run/vpnexec, whatever `--socket` says (a second vpnd with its socket elsewhere is
/// refused too; a file of root's directory, which no other user can make first), held with
/// flock for the daemon's lifetime; the kernel releases it when the process dies, however
/// it dies.
final class NamespaceLock {
    static let directory = "/run/vpnexec"
    private let file: FileDescriptor

    init() throws {
        var namespace = stat()
        guard stat("/proc/self/ns/net", &namespace) == 0 else {
            throw SystemError("stat /proc/self/ns/net")
        }
        try Self.makeDirectory(Self.directory, doing: "cannot make the directory of vpnd's lock \(Self.directory)")
        let path = "\(Self.directory)/netns-\(namespace.st_ino).lock"
        file = try Self.open(path)
        let fd = file.raw
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(decoding: Self.read(fd), as: UTF8.self)) ?? ""
            throw ApplyError.namespaceHeld(pid: holder.isEmpty ? nil : holder, lock: path)
        }
        let pid = Array(String(getpid()).utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
    }

    /// `path` made if missing, but not its parents: a path given by mistake is said.
    static func makeDirectory(_ path: String, doing: String) throws {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw ApplyError.system(SystemError("mkdir \(path)"), doing: doing) }
    }

    private static func open(_ path: String) throws(SystemError) -> FileDescriptor {
        try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o644)
    }

    private static func read(_ fd: Int32) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &buffer, buffer.count, 0)
        return count > 0 ? Array(buffer[0..<count]) : []
    }
}
