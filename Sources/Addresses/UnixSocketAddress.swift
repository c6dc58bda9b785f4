import Glibc

/// A Unix domain socket's path as the kernel takes it (`sockaddr_un`). A path that does not
/// fit, or holds a NUL byte, is refused when the value is made, never cut: a shortened path
/// binds or connects somewhere other than the one asked for.
public struct UnixSocketAddress: Sendable, CustomStringConvertible {
    public let path: String
    private let storage: sockaddr_un

    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let reason: String
        public var description: String { "socket path \(path): \(reason)" }
    }

    /// The longest path that fits, leaving room for the terminating NUL.
    public static let maximumLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    public init(path: String) throws(Invalid) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty else { throw Invalid(path: path, reason: "empty") }
        guard !bytes.contains(0) else { throw Invalid(path: path, reason: "holds a NUL byte") }
        guard bytes.count <= Self.maximumLength else {
            throw Invalid(path: path, reason: "too long (\(bytes.count) bytes; a Unix socket path holds at most \(Self.maximumLength))")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
        self.path = path
        storage = address
    }

    /// The address as bind(2) and connect(2) take it.
    public func withSockaddr<R, E: Error>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R) throws(E) -> R {
        var address = storage
        return try withUnsafePointer(to: &address) { pointer throws(E) in
            try body(UnsafeRawPointer(pointer).assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }

    public var description: String { path }
}
