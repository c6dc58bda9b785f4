import CLinux
import Glibc

/// A process held by a pidfd: it names exactly one process for as long as we hold it, so
/// "is it still alive?" after an action proves the pid still meant that process.
public final class ProcessHandle {
    public let pid: Int32
    private let fd: Int32

    init(pid: Int32, pidfd: Int32) {
        self.pid = pid
        fd = pidfd
    }

    public static func open(pid: Int32) throws -> ProcessHandle {
        let fd = vx_pidfd_open(pid)
        guard fd >= 0 else {
            throw ApplyError(errno == ESRCH ? "no process \(pid)" : "cannot open process \(pid): \(String(cString: strerror(errno)))")
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
        guard let status = readText("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap { UInt32($0) }
        }
        return nil
    }

    public func commandName() -> String {
        (readText("/proc/\(pid)/comm") ?? "?").trimmingTrailingNewline()
    }
}

/// Who is on the other end of a control connection, as the kernel tells it.
public struct Peer {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups plus the primary one.
    public var groups: [UInt32]
    public var process: ProcessHandle?

    public static func of(socket fd: Int32) -> Peer? {
        var credentials = vx_ucred()
        guard vx_peer_credentials(fd, &credentials) == 0 else { return nil }
        var groups = [gid_t](repeating: 0, count: 65536)
        var length = socklen_t(groups.count * MemoryLayout<gid_t>.size)
        var supplementary: [UInt32] = []
        if getsockopt(fd, SOL_SOCKET, vx_so_peergroups(), &groups, &length) == 0 {
            supplementary = Array(groups.prefix(Int(length) / MemoryLayout<gid_t>.size))
        }
        // SO_PEERPIDFD (Linux 6.5) names the connecting process itself, race-free; older
        // kernels fall back to pidfd_open, checked for liveness after the move.
        var pidfd: Int32 = -1
        var size = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, vx_so_peerpidfd(), &pidfd, &size) != 0 || pidfd < 0 {
            pidfd = vx_pidfd_open(credentials.pid)
        }
        return Peer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid,
                    groups: Array(Set(supplementary + [credentials.gid])).sorted(),
                    process: pidfd >= 0 ? ProcessHandle(pid: credentials.pid, pidfd: pidfd) : nil)
    }

    public var userName: String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return "uid \(uid)" }
        return "\(String(cString: entry.pw_name)) (uid \(uid))"
    }
}

func readText(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 8192)
    while true {
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { break }
        data += buffer[0..<count]
    }
    return String(decoding: data, as: UTF8.self)
}

extension String {
    func trimmingTrailingNewline() -> String {
        var copy = self
        while copy.last == "\n" { copy.removeLast() }
        return copy
    }
}
