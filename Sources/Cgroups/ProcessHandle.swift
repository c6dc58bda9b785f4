import CLinux
import Glibc

/// A process held by a pidfd: it names exactly one process for as long as we hold it, so
/// "is it still alive?" after an action proves the pid still meant that process.
public final class ProcessHandle {
    public let pid: Int32
    private let fd: Int32

    public init(pid: Int32, pidfd: Int32) {
        self.pid = pid
        fd = pidfd
    }

    public static func open(pid: Int32) throws -> ProcessHandle {
        let fd = vx_pidfd_open(pid)
        guard fd >= 0 else {
            throw CgroupError(errno == ESRCH ? "no process \(pid)" : "cannot open process \(pid): \(String(cString: strerror(errno)))")
        }
        return ProcessHandle(pid: pid, pidfd: fd)
    }

    deinit { close(fd) }

    /// Signal 0 checks existence only; EPERM (another user's process, and vpnd keeps no
    /// CAP_KILL) still means it exists.
    public var isAlive: Bool {
        vx_pidfd_send_signal(fd, 0) == 0 || errno == EPERM
    }

    /// Real uid from /proc/PID/status (meaningful only while isAlive holds afterwards).
    public func realUID() -> UInt32? {
        guard let status = CgroupHierarchy.readFile("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap { UInt32($0) }
        }
        return nil
    }

    public func commandName() -> String {
        (CgroupHierarchy.readFile("/proc/\(pid)/comm") ?? "?").trimmingTrailingNewline()
    }
}

extension String {
    public func trimmingTrailingNewline() -> String {
        var copy = self
        while copy.last == "\n" { copy.removeLast() }
        return copy
    }
}

extension CgroupHierarchy {
    /// Moves the process a handle names, never another that reused its pid: it must be
    /// alive before the write and still after it (a pid is not reused while its process
    /// exists); if it exited in between, the write is undone.
    public func move(_ process: ProcessHandle, to relative: String) throws {
        guard process.isAlive else { throw CgroupError("process \(process.pid) exited") }
        let previous = Self.cgroup(ofProcess: process.pid)
        try move(pid: process.pid, to: relative)
        guard process.isAlive else {
            if let previous { try? move(pid: process.pid, to: previous) }
            throw CgroupError("process \(process.pid) exited")
        }
    }
}
