import CNetlink
import Glibc

/// The sockets of this network namespace (sock_diag, what `ss` reads): each UDP and TCP
/// socket's inode and local port, so that a process's sockets (inodes from /proc/PID/fd)
/// become ports the kernel's rules can match. Needs no privilege.
public final class SocketDiag {
    private let netlink: NetlinkSocket

    public struct Entry: Hashable, Sendable {
        public var inode: UInt64
        public var isTCP: Bool
        public var localPort: UInt16
        public var uid: UInt32
    }

    public init() throws {
        netlink = try NetlinkSocket(bus: NETLINK_SOCK_DIAG)
        netlink.setReceiveTimeout(seconds: 2)
    }

    /// Every UDP and TCP socket, IPv4 and IPv6, in any state.
    public func sockets() throws -> [Entry] {
        var entries: [Entry] = []
        for family in [AF_INET, AF_INET6] {
            for transport in [IPPROTO_UDP, IPPROTO_TCP] {
                let message = NetlinkMessage(type: UInt16(SOCK_DIAG_BY_FAMILY), flags: 0)
                var request = inet_diag_req_v2()
                request.sdiag_family = UInt8(family)
                request.sdiag_protocol = UInt8(transport)
                request.idiag_states = ~0
                message.putFamilyHeader(request)
                for reply in try netlink.dump(message, operation: "list sockets") {
                    let answer = reply.familyHeader(as: inet_diag_msg.self)
                    entries.append(Entry(inode: UInt64(answer.idiag_inode), isTCP: transport == IPPROTO_TCP,
                                         localPort: UInt16(bigEndian: answer.id.idiag_sport), uid: answer.idiag_uid))
                }
            }
        }
        return entries
    }
}
