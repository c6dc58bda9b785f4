import Addresses
import CLinux
import Cgroups
import Descriptors
import Glibc
import Plan
import SocketPrograms

/// Where members' UDP queries arrive once routed to this host (DNSRouting): one socket a
/// family for every profile, on port 53 of the address of its prefix that names no profile
/// (127.77.0.0, fd7f:4d::), and the steering program that hands it each query routed from a
/// profile's address. The maps hold the sockets under the key of each profile whose proxy
/// runs: a query from any other profile's address is dropped by the program.
///
/// Made at start, before vpnd drops its capabilities: port 53 takes CAP_NET_BIND_SERVICE,
/// which vpnd does not keep, and the program CAP_BPF. The sockets are transparent (an
/// answer leaves from the address its query asked, the packet-info control message; the
/// port is the socket's own, which is why 53) and read each query's destination (packet
/// info) and mark (SO_RCVMARK).
final class DNSSteeringPoint {
    static func address(ipv6: Bool) -> IPAddress { DNSSteering.prefix(ipv6: ipv6).address }

    private let link: DNSSteeringLink
    let socket: FileDescriptor
    let socket6: FileDescriptor
    private(set) var served: Set<UInt32> = []

    init() throws {
        link = try DNSSteeringLink(capacity: 256)
        socket = try Self.open(ipv6: false)
        socket6 = try Self.open(ipv6: true)
    }

    private static func open(ipv6: Bool) throws -> FileDescriptor {
        let socket = try FileDescriptor.socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        var on: Int32 = 1
        let family: [(Int32, Int32)] = ipv6
            ? [(Int32(IPPROTO_IPV6), IPV6_V6ONLY), (Int32(IPPROTO_IPV6), vx_ipv6_transparent()), (Int32(IPPROTO_IPV6), vx_ipv6_recvpktinfo())]
            : [(Int32(IPPROTO_IP), vx_ip_transparent()), (Int32(IPPROTO_IP), vx_ip_pktinfo())]
        // Beside a DNS server on 0.0.0.0:53 or [::]:53 that sets SO_REUSEADDR too.
        for (level, option) in [(SOL_SOCKET, SO_REUSEADDR)] + family + [(SOL_SOCKET, vx_so_rcvmark())] {
            guard setsockopt(socket.raw, level, option, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw SystemError("setsockopt \(option) on the IPv\(ipv6 ? 6 : 4) DNS steering socket")
            }
        }
        // Bursts of queries must not overflow into losses.
        var size: Int32 = 4 << 20
        setsockopt(socket.raw, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(socket.raw, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        let address = Self.address(ipv6: ipv6)
        guard SocketAddress(address, port: 53).withSockaddr({ Glibc.bind(socket.raw, $0, $1) }) == 0 else {
            throw SystemError("bind \(SocketAddress(address, port: 53)) (a DNS server bound to port 53 of every address without SO_REUSEADDR holds the port)")
        }
        return socket
    }

    /// The sockets' own mark, by which the input hook tells them from any other socket a
    /// steered query could find (DNSRouting.steeredQueryGuards): the policy's `proxyMark`.
    func setMark(_ mark: UInt32) throws(SystemError) {
        for (socket, family) in [(socket.raw, 4), (socket6.raw, 6)] {
            var mark = mark
            guard setsockopt(socket, SOL_SOCKET, vx_so_mark(), &mark, socklen_t(MemoryLayout<UInt32>.size)) == 0 else {
                throw SystemError("SO_MARK on the IPv\(family) DNS steering socket")
            }
        }
    }

    /// The profiles (by key) whose queries the sockets take; the others' are dropped.
    func serve(_ keys: Set<UInt32>) throws(DNSSteeringLink.Failure) {
        for key in served.subtracting(keys) {
            link.remove(key: key)
            link.remove(key: key, ipv6: true)
        }
        for key in keys.subtracting(served) {
            try link.set(key: key, socket: socket)
            try link.set(key: key, socket: socket6, ipv6: true)
        }
        served = keys
    }
}
