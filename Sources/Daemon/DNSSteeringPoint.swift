import Addresses
import CLinux
import Cgroups
import Descriptors
import Glibc
import Plan

/// Where members' IPv4 UDP queries arrive once routed to this host (DNSRouting): one socket
/// for every profile, on 127.77.0.0 (an address that names no profile) and port 53, and the
/// steering program that hands it each query routed from a profile's address. The map
/// holds the socket under the key of each profile whose proxy runs: a query from any other
/// profile's address is dropped by the program.
///
/// Made at start, before vpnd drops its capabilities: port 53 takes CAP_NET_BIND_SERVICE,
/// which vpnd does not keep, and the program CAP_BPF. The socket is transparent (an answer
/// leaves from the address its query asked, `ipi_spec_dst`; the port is the socket's own,
/// which is why 53) and reads each query's destination (IP_PKTINFO) and mark (SO_RCVMARK).
final class DNSSteeringPoint {
    static let address = IPAddress.v4(0x7f4d_0000)

    private let link: DNSSteeringLink
    let socket: FileDescriptor
    private(set) var served: Set<UInt32> = []

    init() throws {
        link = try DNSSteeringLink(capacity: 256)
        let socket = try FileDescriptor.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        var on: Int32 = 1
        // Beside a DNS server on 0.0.0.0:53 that sets SO_REUSEADDR too.
        for (level, option) in [(SOL_SOCKET, SO_REUSEADDR), (Int32(IPPROTO_IP), vx_ip_transparent()), (Int32(IPPROTO_IP), vx_ip_pktinfo()),
                                (SOL_SOCKET, vx_so_rcvmark())] {
            guard setsockopt(socket.raw, level, option, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw SystemError("setsockopt \(option) on the DNS steering socket")
            }
        }
        // Bursts of queries must not overflow into losses.
        var size: Int32 = 4 << 20
        setsockopt(socket.raw, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(socket.raw, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        guard SocketAddress(Self.address, port: 53).withSockaddr({ Glibc.bind(socket.raw, $0, $1) }) == 0 else {
            throw SystemError("bind \(Self.address):53 (a DNS server bound to 0.0.0.0:53 without SO_REUSEADDR holds the port)")
        }
        self.socket = socket
    }

    /// The socket's own mark, by which the input hook tells it from any other socket a
    /// steered query could find (DNSRouting.steeredQueryGuard): the policy's `proxyMark`.
    func setMark(_ mark: UInt32) throws(SystemError) {
        var mark = mark
        guard setsockopt(socket.raw, SOL_SOCKET, vx_so_mark(), &mark, socklen_t(MemoryLayout<UInt32>.size)) == 0 else {
            throw SystemError("SO_MARK on the DNS steering socket")
        }
    }

    /// The profiles (by key) whose queries the socket takes; the others' are dropped.
    func serve(_ keys: Set<UInt32>) throws(DNSSteeringLink.Failure) {
        for key in served.subtracting(keys) { link.remove(key: key) }
        for key in keys.subtracting(served) { try link.set(key: key, socket: socket) }
        served = keys
    }
}
