import Addresses
import CLinux
import Descriptors
import Glibc

/// One exchange with vpnd on its control socket: a request line out (with a descriptor
/// along, vpnexec's pidfd of itself), the answer line back. The bytes only: vpnctl codes
/// them with Foundation's JSON (Control), vpnexec with LaunchMessages.
public enum ControlConnection {
    private static func unixStream() throws(ControlClientError) -> FileDescriptor {
        do { return try .socket(AF_UNIX, Int32(SOCK_STREAM.rawValue)) } catch {
            throw .socket(error)
        }
    }

    public static func exchange(_ request: [UInt8], socketPath: String, passing: DescriptorNumber? = nil) throws(ControlClientError) -> [UInt8] {
        let connection = try unixStream()
        let address: UnixSocketAddress
        do { address = try UnixSocketAddress(path: socketPath) } catch { throw .address(error) }
        let connected = address.withSockaddr { connect(connection.raw, $0, $1) }
        guard connected == 0 else {
            let code = errno
            switch code {
            case ENOENT, ECONNREFUSED:
                throw .notRunning(socketPath: socketPath)
            case EACCES:
                throw .permissionDenied(socketPath: socketPath)
            default:
                throw .unreachable(socketPath: socketPath, SystemError("connect", code: code))
            }
        }
        var sent = 0
        while sent < request.count {
            // The descriptor travels with the first bytes.
            let count = request[sent...].withUnsafeBytes { vx_send_with_fd(connection.raw, $0.baseAddress, $0.count, sent == 0 ? (passing?.raw ?? -1) : -1) }
            guard count > 0 else { throw .closedWhileSending(SystemError("send")) }
            sent += count
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = retryingInterrupted { read(connection.raw, &buffer, buffer.count) }
            guard count > 0 else { break }
            answer += buffer[0..<count]
            if answer.last == UInt8(ascii: "\n") { break }
        }
        guard !answer.isEmpty else { throw .closedWithoutAnswer }
        return answer
    }
}
