import CLinux
import Cgroups
import Descriptors
import Facts
import Glibc

/// Who is on the other end of a control connection, as the kernel tells it.
public struct Peer {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups plus the primary one.
    public var groups: [UInt32]
    /// The calling process, held by a pidfd the kernel vouches for; nil when it cannot be
    /// named without trusting a bare pid (see `unidentified`).
    public var process: ProcessHandle?
    /// Why `process` is nil.
    public var unidentified: String?

    /// The process is named race-free, never from a bare pid (which another process may
    /// have taken since the caller connected):
    /// - SO_PEERPIDFD (Linux 6.5): the kernel's pidfd of the process that connected;
    /// - else the pidfd the client passed with its request (vpnexec sends
    ///   `pidfd_open(getpid())`), accepted only if it names the SO_PEERCRED pid, whose real
    ///   uid is the SO_PEERCRED uid, and that process is still alive after the check;
    /// - else the request is refused.
    public static func of(socket: DescriptorNumber, passed: DescriptorNumber?, usePeerPidfd: Bool = true) -> Peer? {
        let fd = socket.raw
        var credentials = vx_ucred()
        guard vx_peer_credentials(fd, &credentials) == 0 else { return nil }
        var groups = [gid_t](repeating: 0, count: 65536)
        var length = socklen_t(groups.count * MemoryLayout<gid_t>.size)
        var supplementary: [UInt32] = []
        if getsockopt(fd, SOL_SOCKET, vx_so_peergroups(), &groups, &length) == 0 {
            supplementary = Array(groups.prefix(Int(length) / MemoryLayout<gid_t>.size))
        }
        var peer = Peer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid,
                        groups: Array(Set(supplementary + [credentials.gid])).sorted(), process: nil, unidentified: nil)
        var pidfd: Int32 = -1
        var size = socklen_t(MemoryLayout<Int32>.size)
        if usePeerPidfd, getsockopt(fd, SOL_SOCKET, vx_so_peerpidfd(), &pidfd, &size) == 0, pidfd >= 0 {
            let process = ProcessHandle(pid: credentials.pid, pidfd: FileDescriptor(adopting: pidfd))
            if process.isAlive {
                peer.process = process
            } else {
                peer.unidentified = "the process that connected (pid \(credentials.pid)) has exited"
            }
            return peer
        }
        guard let passed else {
            peer.unidentified = "this kernel cannot name the connecting process (no SO_PEERPIDFD, Linux < 6.5) and the client sent no pidfd of itself; use a vpnexec/vpnctl of this version"
            return peer
        }
        switch ProcessHandle.verify(pidfd: passed, pid: credentials.pid, uid: credentials.uid) {
        case let .success(process): peer.process = process
        case let .failure(reason): peer.unidentified = "the pidfd sent with the request \(reason)"
        }
        return peer
    }

    public var userName: String {
        UserNames.name(of: uid).map { "\($0) (uid \(uid))" } ?? "uid \(uid)"
    }
}
