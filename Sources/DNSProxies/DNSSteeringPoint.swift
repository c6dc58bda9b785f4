import Addresses
import CLinux
import Cgroups
import Descriptors
import Glibc
import Plan
import SocketPrograms

/// Where members' queries arrive once routed to this host (DNSRouting): for every
/// profile, one UDP socket a family, on port 53 of the address of its prefix that names no
/// profile (127.77.0.0, fd7f:4d::), and one TCP listener a family, on a port of its own
/// there; and the steering program that hands each query routed from a profile's address to
/// the socket of its family and transport. The maps hold the sockets under the key of each
/// profile whose proxy runs: a query from any other profile's address is dropped by the
/// program.
///
/// Made at start, before vpnd drops its capabilities: port 53 takes CAP_NET_BIND_SERVICE,
/// which vpnd does not keep, and the program CAP_BPF. The sockets are transparent: an answer
/// leaves from the address its query asked (for UDP the packet-info control message, the
/// port being the socket's own, which is why 53; a TCP connection has the address and port
/// asked as its own, so its listener's port does not matter and none is fought over with a
/// resolver listening on 0.0.0.0:53). The UDP sockets read each query's destination (packet
/// info) and mark (SO_RCVMARK); who made a TCP connection is asked of the kernel
/// (`SocketDiag.mark(ofConnectionFrom:to:)`).
public final class DNSSteeringPoint {
    public static func address(ipv6: Bool) -> IPAddress { DNSSteering.prefix(ipv6: ipv6).address }

    private let link: DNSSteeringLink
    let socket: FileDescriptor
    let socket6: FileDescriptor
    let listener: FileDescriptor
    let listener6: FileDescriptor
    public private(set) var served: Set<UInt32> = []

    public init() throws {
        link = try DNSSteeringLink(capacity: 256)
        socket = try Self.open(ipv6: false)
        socket6 = try Self.open(ipv6: true)
        listener = try Self.listen(ipv6: false)
        listener6 = try Self.listen(ipv6: true)
    }

    private static func transparent(_ socket: borrowing FileDescriptor, ipv6: Bool, also more: [(Int32, Int32)] = []) throws {
        var on: Int32 = 1
        let family: [(Int32, Int32)] = ipv6
            ? [(Int32(IPPROTO_IPV6), IPV6_V6ONLY), (Int32(IPPROTO_IPV6), vx_ipv6_transparent())]
            : [(Int32(IPPROTO_IP), vx_ip_transparent())]
        // Beside a DNS server on 0.0.0.0:53 or [::]:53 that sets SO_REUSEADDR too.
        for (level, option) in [(SOL_SOCKET, SO_REUSEADDR)] + family + more {
            guard setsockopt(socket.raw, level, option, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw SystemError("setsockopt \(option) on an IPv\(ipv6 ? 6 : 4) DNS steering socket")
            }
        }
    }

    private static func open(ipv6: Bool) throws -> FileDescriptor {
        let socket = try FileDescriptor.socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        try transparent(socket, ipv6: ipv6, also: [ipv6 ? (Int32(IPPROTO_IPV6), vx_ipv6_recvpktinfo()) : (Int32(IPPROTO_IP), vx_ip_pktinfo()),
                                                   (SOL_SOCKET, vx_so_rcvmark())])
        // Bursts of queries must not overflow into losses.
        var size: Int32 = 4 << 20
        setsockopt(socket.raw, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(socket.raw, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        let address = Self.address(ipv6: ipv6)
        guard Endpoint(address: address, port: 53).withSockaddr({ Glibc.bind(socket.raw, $0, $1) }) == 0 else {
            throw SystemError("bind \(Endpoint(address: address, port: 53)) (a DNS server bound to port 53 of every address without SO_REUSEADDR holds the port)")
        }
        return socket
    }

    /// The TCP listener of a family: its port is the kernel's choice.
    private static func listen(ipv6: Bool) throws -> FileDescriptor {
        let socket = try FileDescriptor.socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        try transparent(socket, ipv6: ipv6)
        let address = Self.address(ipv6: ipv6)
        guard Endpoint(address: address, port: 0).withSockaddr({ Glibc.bind(socket.raw, $0, $1) }) == 0 else {
            throw SystemError("bind \(address) (TCP)")
        }
        guard Glibc.listen(socket.raw, 128) == 0 else { throw SystemError("listen on \(address) (TCP)") }
        return socket
    }

    /// The sockets' own mark, by which the input hook tells them from any other socket a
    /// steered query could find (DNSRouting.steeredQueryGuards): the policy's `proxyMark`. A
    /// listener's connections take it from the listener.
    func setMark(_ mark: UInt32) throws(SystemError) {
        for (socket, what) in [(socket.raw, "IPv4 UDP"), (socket6.raw, "IPv6 UDP"), (listener.raw, "IPv4 TCP"), (listener6.raw, "IPv6 TCP")] {
            var mark = mark
            guard setsockopt(socket, SOL_SOCKET, vx_so_mark(), &mark, socklen_t(MemoryLayout<UInt32>.size)) == 0 else {
                throw SystemError("SO_MARK on the \(what) DNS steering socket")
            }
        }
    }

    /// The profiles (by key) whose queries the sockets take; the others' are dropped.
    func serve(_ keys: Set<UInt32>) throws(SocketProgramError) {
        for key in served.subtracting(keys) {
            for (ipv6, tcp) in [(false, false), (true, false), (false, true), (true, true)] { link.remove(key: key, ipv6: ipv6, tcp: tcp) }
        }
        for key in keys.subtracting(served) {
            try link.set(key: key, socket: socket)
            try link.set(key: key, socket: socket6, ipv6: true)
            try link.set(key: key, socket: listener, tcp: true)
            try link.set(key: key, socket: listener6, ipv6: true, tcp: true)
        }
        served = keys
    }
}
