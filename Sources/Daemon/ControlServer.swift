import CLinux
import Cgroups
import Control
import Glibc

/// The listening socket at /run/vpnexec/vpnd.sock and its connections. Anyone may
/// connect (mode 0666): what a caller may do is decided per request from the kernel's
/// account of who the caller is. Connections are non-blocking and bounded in number,
/// size and time, so that no local user can stall the daemon.
final class ControlServer {
    let path: String
    let listener: Int32
    private(set) var connections: [Int32: Connection] = [:]
    static let maximumConnections = 64
    static let maximumRequestBytes = 65536
    static let requestTimeout = 5.0

    struct Connection {
        var buffer: [UInt8] = []
        var opened: Double
    }

    init(path: String) throws {
        self.path = path
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty {
            mkdir(directory, 0o755)
        }
        if Self.somebodyListens(path) {
            throw ApplyError("another vpnd already listens on \(path)")
        }
        unlink(path)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard listener >= 0 else { throw ApplyError("cannot create control socket: \(String(cString: strerror(errno)))") }
        var address = Self.address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw ApplyError("cannot bind \(path): \(String(cString: strerror(errno)))") }
        chmod(path, 0o666)
        guard listen(listener, 64) == 0 else { throw ApplyError("cannot listen on \(path): \(String(cString: strerror(errno)))") }
    }

    func close() {
        for fd in connections.keys { Glibc.close(fd) }
        connections = [:]
        Glibc.close(listener)
        unlink(path)
    }

    static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix(107))) }
        return address
    }

    static func somebodyListens(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var address = address(path)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }

    func acceptAll(now: Double) {
        while true {
            let fd = vx_accept4(listener, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
            guard fd >= 0 else { return }
            guard connections.count < Self.maximumConnections else {
                Glibc.close(fd)
                continue
            }
            connections[fd] = Connection(opened: now)
        }
    }

    /// Reads what a connection sent; returns a complete request line, if there is one.
    /// Connections that closed, sent too much or garbage are answered (if possible) and dropped.
    func read(_ fd: Int32) -> ControlRequest?? {
        guard var connection = connections[fd] else { return nil }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count > 0 {
                connection.buffer += chunk[0..<count]
                if connection.buffer.count > Self.maximumRequestBytes {
                    respond(fd, .failure("request too large"))
                    return nil
                }
                continue
            }
            if count == 0 || (errno != EAGAIN && errno != EINTR) {
                if !connection.buffer.contains(UInt8(ascii: "\n")) {
                    drop(fd)
                    return nil
                }
            }
            break
        }
        connections[fd] = connection
        guard let newline = connection.buffer.firstIndex(of: UInt8(ascii: "\n")) else { return .some(nil) }
        do {
            return .some(try ControlCoding.decode(ControlRequest.self, from: Array(connection.buffer[..<newline])))
        } catch {
            respond(fd, .failure("malformed request"))
            return nil
        }
    }

    /// Writes the answer (blocking briefly: answers are small) and closes.
    func respond(_ fd: Int32, _ response: ControlResponse) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = ControlCoding.encode(response)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { break }
            sent += count
        }
        drop(fd)
    }

    func drop(_ fd: Int32) {
        connections[fd] = nil
        Glibc.close(fd)
    }

    /// Connections older than the timeout are dropped unanswered.
    func expire(now: Double) {
        for (fd, connection) in connections where now - connection.opened > Self.requestTimeout {
            drop(fd)
        }
    }
}
