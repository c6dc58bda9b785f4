import Glibc

/// Why the bytes at a socket address are not an `Endpoint`.
public enum SockaddrError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Neither AF_INET nor AF_INET6 (a Unix socket's, AF_UNSPEC).
    case family(Int32)
    /// Shorter than its family's structure, or than the family field itself (family nil).
    case length(Int, family: Int32?)

    public var description: String {
        switch self {
        case let .family(family): return "socket address of family \(family), not IPv4 or IPv6"
        case let .length(length, nil): return "socket address of \(length) bytes, too short to name its family"
        case let .length(length, family?): return "socket address of family \(family) in \(length) bytes, shorter than its structure"
        }
    }
}

/// The one conversion between an `Endpoint` and the socket addresses the kernel takes and
/// gives (sockaddr_in, sockaddr_in6): vpnd's sockets, the tunnels' UDP sockets, vpnctl's
/// probe. It runs once per datagram a tunnel sends and receives, so it is inlined into its
/// callers (as the tunnel's own conversion was) and writes into storage its caller owns:
/// nothing is allocated and nothing called.
extension Endpoint {
    /// Room enough for either family's socket address.
    public static let sockaddrCapacity = MemoryLayout<sockaddr_in6>.size

    /// From what the kernel filled in (recvfrom, recvmmsg, accept, getsockname,
    /// getaddrinfo): `length` is the length it said, checked against the family's structure.
    @inlinable @inline(__always)
    public init(sockaddr raw: UnsafeRawPointer, length: socklen_t) throws(SockaddrError) {
        let length = Int(length)
        guard length >= MemoryLayout<sa_family_t>.size else { throw .length(length, family: nil) }
        let family = Int32(raw.loadUnaligned(as: sa_family_t.self))
        switch family {
        case AF_INET:
            guard length >= MemoryLayout<sockaddr_in>.size else { throw .length(length, family: family) }
            let sin = raw.loadUnaligned(as: sockaddr_in.self)
            self.init(address: .v4(UInt32(bigEndian: sin.sin_addr.s_addr)), port: UInt16(bigEndian: sin.sin_port))
        case AF_INET6:
            guard length >= MemoryLayout<sockaddr_in6>.size else { throw .length(length, family: family) }
            let sin6 = raw.loadUnaligned(as: sockaddr_in6.self)
            let (hi, lo) = withUnsafeBytes(of: sin6.sin6_addr) {
                (UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)), UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            self.init(address: .v6(hi, lo), port: UInt16(bigEndian: sin6.sin6_port), scopeID: sin6.sin6_scope_id)
        default:
            throw .family(family)
        }
    }

    /// Writes the socket address at `storage` (room for `sockaddrCapacity` bytes) and
    /// returns its length: a sockaddr_in for IPv4, a sockaddr_in6 for IPv6. `mappingIPv4`
    /// (for a dual-stack AF_INET6 socket) writes IPv4 too as a sockaddr_in6, ::ffff:a.b.c.d.
    @inlinable @inline(__always)
    @discardableResult
    public func store(into storage: UnsafeMutableRawPointer, mappingIPv4: Bool = false) -> socklen_t {
        if case let .v4(value) = address, !mappingIPv4 {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr.s_addr = value.bigEndian
            storage.storeBytes(of: sin, as: sockaddr_in.self)
            return socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_port = port.bigEndian
        sin6.sin6_scope_id = scopeID
        withUnsafeMutableBytes(of: &sin6.sin6_addr) { bytes in
            switch address {
            case let .v4(value):
                bytes.storeBytes(of: UInt32(0xffff).bigEndian, toByteOffset: 8, as: UInt32.self)
                bytes.storeBytes(of: value.bigEndian, toByteOffset: 12, as: UInt32.self)
            case let .v6(hi, lo):
                bytes.storeBytes(of: hi.bigEndian, toByteOffset: 0, as: UInt64.self)
                bytes.storeBytes(of: lo.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
        }
        storage.storeBytes(of: sin6, as: sockaddr_in6.self)
        return socklen_t(MemoryLayout<sockaddr_in6>.size)
    }

    /// The socket address as bind(2), connect(2) and sendto(2) take it.
    @inlinable
    public func withSockaddr<R, E: Error>(mappingIPv4: Bool = false, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R) throws(E) -> R {
        var storage = sockaddr_in6()
        return try withUnsafeMutablePointer(to: &storage) { pointer throws(E) in
            let length = store(into: UnsafeMutableRawPointer(pointer), mappingIPv4: mappingIPv4)
            return try body(UnsafeRawPointer(pointer).assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// An IPv4 peer as a dual-stack socket reports it (::ffff:a.b.c.d) as IPv4; any other
    /// endpoint as it is.
    @inlinable @inline(__always)
    public var unmapped: Endpoint {
        guard case let .v6(hi, lo) = address, hi == 0, lo >> 32 == 0xffff else { return self }
        return Endpoint(address: .v4(UInt32(truncatingIfNeeded: lo)), port: port)
    }

    /// A socket's own address (getsockname): an accepted connection's is the one its client
    /// asked. Nil when the call fails or the socket is not IPv4 or IPv6.
    public static func local(of socket: Int32) -> Endpoint? { named(socket, by: getsockname) }

    /// The other end of a connected socket (getpeername).
    public static func peer(of socket: Int32) -> Endpoint? { named(socket, by: getpeername) }

    private static func named(_ socket: Int32, by call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Endpoint? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            let result = pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(socket, $0, &length) }
            return result == 0 ? try? Endpoint(sockaddr: pointer, length: length) : nil
        }
    }
}
