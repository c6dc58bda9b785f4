import Control
import Foundation
import NetTestSupport

/// A control socket that answers as vpnd would, from a closure: for what the commands do
/// with an answer (write a file, exec a command), tested without root, namespaces or a vpnd.
final class FakeControlServer: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let answer: @Sendable (ControlRequest) -> ControlResponse

    init(answer: @escaping @Sendable (ControlRequest) -> ControlResponse) throws {
        path = "/tmp/vx-fake-\(uniqueTag()).sock"
        self.answer = answer
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestEnvironmentError("socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard bound == 0, listen(fd, 8) == 0 else { throw TestEnvironmentError("bind \(path): \(errno)") }
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// Until the socket is shut down: one request a connection, one answer.
    private func serve() {
        while true {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            var line: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while line.last != UInt8(ascii: "\n") {
                let count = read(connection, &buffer, buffer.count)
                guard count > 0 else { break }
                line += buffer[0..<count]
            }
            if let request = try? ControlCoding.decode(ControlRequest.self, from: line) {
                let bytes = ControlCoding.encode(answer(request))
                _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            }
            close(connection)
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        unlink(path)
    }
}
