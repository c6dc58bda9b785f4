import CNetlink
import Descriptors
import Glibc

/// Exec events from the kernel's process connector (NETLINK_CONNECTOR, proc events):
/// the pid of every process that called execve, as it happens, whoever started it (a
/// shell, a desktop launcher, a service). The kernel sends them only to listeners in the
/// initial network namespace; the caller opens this there.
public final class ExecEvents {
    private let socket: NetlinkSocket

    public init() throws {
        socket = try NetlinkSocket(bus: NETLINK_CONNECTOR, groups: UInt32(CN_IDX_PROC))
        try listen(true)
        let fd = socket.fileDescriptor
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        // Bursts of execs (a build, a login) must not overflow into lost events.
        socket.reserveBuffers(bytes: 4 << 20)
    }

    public var fileDescriptor: DescriptorNumber { DescriptorNumber(borrowing: socket.fileDescriptor) }

    /// Subscribes to (or unsubscribes from) the events: the kernel sends every fork, exec
    /// and exit to a subscriber, so vpnd listens only while a policy lists executables.
    public func listen(_ on: Bool) throws {
        var message = [UInt8](repeating: 0, count: 64)
        let length = message.withUnsafeMutableBytes { vx_cn_proc_listen($0.baseAddress, socket.portID, on ? 1 : 0) }
        try socket.send(Array(message.prefix(length)), operation: on ? "subscribe to exec events" : "unsubscribe from exec events")
    }

    /// Every exec since the last call, and whether the kernel dropped some (the socket
    /// overflowed: the caller then looks at every process).
    public func drain() -> (pids: [Int32], lost: Bool) {
        var pids: [Int32] = []
        var lost = false
        while true {
            do {
                let replies = try socket.receive(operation: "read exec events")
                if replies.isEmpty { break }
                for reply in replies {
                    var tgid: Int32 = 0
                    if reply.withHeader({ vx_cn_proc_exec($0, &tgid) }) == 1 { pids.append(tgid) }
                }
            } catch let error as NetlinkError {
                if error.code == ENOBUFS { lost = true; continue }
                break
            } catch {
                break
            }
        }
        return (pids, lost)
    }
}
