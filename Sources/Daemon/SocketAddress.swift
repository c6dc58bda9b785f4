import Addresses
import Descriptors
import Glibc

/// An IP address and port as the socket calls take and give them (sockaddr_in or
/// sockaddr_in6), for vpnd's own sockets.
struct SocketAddress: Hashable, CustomStringConvertible {
    var address: IPAddress
    var port: UInt16

    /// From what the kernel filled in (recvfrom, accept).
    init?(_ storage: sockaddr_storage) {
        var storage = storage
        let parsed: (IPAddress, UInt16)? = withUnsafeBytes(of: &storage) { raw in
            switch Int32(raw.load(as: sa_family_t.self)) {
            case AF_INET:
                let sin = raw.load(as: sockaddr_in.self)
                return (.v4(UInt32(bigEndian: sin.sin_addr.s_addr)), UInt16(bigEndian: sin.sin_port))
            case AF_INET6:
                let sin6 = raw.load(as: sockaddr_in6.self)
                let bytes = withUnsafeBytes(of: sin6.sin6_addr) { Array($0) }
                return IPAddress(bytes: bytes).map { ($0, UInt16(bigEndian: sin6.sin6_port)) }
            default:
                return nil
            }
        }
        guard let parsed else { return nil }
        address = parsed.0
        port = parsed.1
    }

    init(_ address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    var family: Int32 { address.isIPv4 ? AF_INET : AF_INET6 }

    /// The other end of a connected socket (getpeername).
    static func peer(of socket: borrowing FileDescriptor) -> SocketAddress? { named(socket, by: getpeername) }

    /// A socket's own address (getsockname): an accepted connection's is the one its
    /// client asked.
    static func local(of socket: borrowing FileDescriptor) -> SocketAddress? { named(socket, by: getsockname) }

    private static func named(_ socket: borrowing FileDescriptor,
                              by call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let raw = socket.raw
        let result = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(raw, $0, &length) } }
        return result == 0 ? SocketAddress(storage) : nil
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch address {
        case let .v4(value):
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr.s_addr = value.bigEndian
            return withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        case .v6:
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0.copyBytes(from: address.bytes) }
            return withUnsafePointer(to: &sin6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
    }

    var description: String { address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)" }
}
