import Addresses
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

    /// A socket's remote end and its mark (the mark comes with CAP_NET_ADMIN).
    public struct Connection: Hashable, Sendable {
        public var destination: IPAddress
        public var mark: UInt32
    }

    /// The remote addresses of every connected UDP and TCP socket (any state but listening),
    /// IPv4 and IPv6, with the socket's mark: which learned addresses are still in use.
    public func connections() throws -> [Connection] {
        var connections: [Connection] = []
        try dump(states: ~UInt32(1 << 10), operation: "list connected sockets") { family, _, reply in // every state but TCP_LISTEN
            let answer = reply.familyHeader(as: inet_diag_msg.self)
            let words = withUnsafeBytes(of: answer.id.idiag_dst) { Array($0) }
            let destination: IPAddress = family == AF_INET
                ? .v4(UInt32(words[0]) << 24 | UInt32(words[1]) << 16 | UInt32(words[2]) << 8 | UInt32(words[3]))
                : IPAddress(bytes: words) ?? .v4(0)
            guard destination != .v4(0), destination != IPAddress(bytes: [UInt8](repeating: 0, count: 16)) else { return }
            let mark = reply.attributes(familyHeaderSize: MemoryLayout<inet_diag_msg>.size).u32(UInt16(INET_DIAG_MARK)) ?? 0
            connections.append(Connection(destination: destination, mark: mark))
        }
        return connections
    }

    /// The mark of the TCP socket of this namespace connected from `source` to
    /// `destination` (both address and port): the other end of a connection accepted here,
    /// as the kernel holds it (the mark comes with CAP_NET_ADMIN). Nil when there is none
    /// (it closed meanwhile). One exact lookup, not a dump.
    public func markOfTCPConnection(from source: IPAddress, port sourcePort: UInt16, to destination: IPAddress, port destinationPort: UInt16) throws -> UInt32? {
        guard source.isIPv4 == destination.isIPv4 else { return nil }
        let message = NetlinkMessage(type: UInt16(SOCK_DIAG_BY_FAMILY), flags: 0)
        var request = inet_diag_req_v2()
        request.sdiag_family = UInt8(source.isIPv4 ? AF_INET : AF_INET6)
        request.sdiag_protocol = UInt8(IPPROTO_TCP)
        request.idiag_states = ~0
        request.id.idiag_sport = sourcePort.bigEndian
        request.id.idiag_dport = destinationPort.bigEndian
        withUnsafeMutableBytes(of: &request.id.idiag_src) { $0.copyBytes(from: source.bytes) }
        withUnsafeMutableBytes(of: &request.id.idiag_dst) { $0.copyBytes(from: destination.bytes) }
        // INET_DIAG_NOCOOKIE: any socket of that address and ports.
        request.id.idiag_cookie = (UInt32.max, UInt32.max)
        message.putFamilyHeader(request)
        let replies: [NetlinkReply]
        do {
            replies = try netlink.request(message, operation: "look up a TCP connection")
        } catch let error as NetlinkError where error.code == ENOENT {
            return nil
        }
        guard let reply = replies.first else { return nil }
        return reply.attributes(familyHeaderSize: MemoryLayout<inet_diag_msg>.size).u32(UInt16(INET_DIAG_MARK)) ?? 0
    }

    /// Every UDP and TCP socket, IPv4 and IPv6, in any state.
    public func sockets() throws -> [Entry] {
        var entries: [Entry] = []
        try dump(states: ~0, operation: "list sockets") { _, transport, reply in
            let answer = reply.familyHeader(as: inet_diag_msg.self)
            entries.append(Entry(inode: UInt64(answer.idiag_inode), isTCP: transport == IPPROTO_TCP,
                                 localPort: UInt16(bigEndian: answer.id.idiag_sport), uid: answer.idiag_uid))
        }
        return entries
    }

    /// One dump for each family and transport (UDP, TCP) of the sockets in `states` (a bit
    /// per TCP state).
    private func dump(states: UInt32, operation: String, _ body: (Int32, Int32, NetlinkReply) -> Void) throws {
        for family in [AF_INET, AF_INET6] {
            for transport in [IPPROTO_UDP, IPPROTO_TCP] {
                let message = NetlinkMessage(type: UInt16(SOCK_DIAG_BY_FAMILY), flags: 0)
                var request = inet_diag_req_v2()
                request.sdiag_family = UInt8(family)
                request.sdiag_protocol = UInt8(transport)
                request.idiag_states = states
                message.putFamilyHeader(request)
                for reply in try netlink.dump(message, operation: operation) { body(family, Int32(transport), reply) }
            }
        }
    }
}
