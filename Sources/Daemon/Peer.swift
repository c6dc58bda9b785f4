import CLinux
import Cgroups
import Glibc

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

