import Facts
import Foundation
import Glibc
import Plan
import Testing

/// Which `wg` sockets vpnd believes: none that anyone but root could have made, and none
/// that nobody listens on.
@Suite struct WireGuardSocketReaderTests {
    /// A socket file at DIR/NAME.sock, left behind by a daemon that is gone (bound, closed).
    func leftBehind(in directory: String, _ name: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array("\(directory)/\(name).sock".utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) { bind(fd, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_un>.size)) }
        try #require(bound == 0)
    }

    func directory(mode: mode_t) throws -> String {
        let path = NSTemporaryDirectory() + "vx-wgsock-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, mode)
        return path
    }

    @Test func aSocketNobodyListensOnIsNoTunnelsSocket() throws {
        let dir = try directory(mode: 0o755)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try leftBehind(in: dir, "wg7")
        let reader = WireGuardSocketReader(directory: dir)
        #expect(reader.transport(of: "wg7") == nil, "its daemon is gone: nothing to keep")
        #expect(reader.transport(of: "wg8") == nil, "no socket at all")
    }

    @Test func aDirectoryOthersMayWriteIsNotBelieved() throws {
        try #require(geteuid() == 0, "the directory must be root's: run as root")
        let dir = try directory(mode: 0o777)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try leftBehind(in: dir, "wg7")
        let transport = try #require(WireGuardSocketReader(directory: dir).transport(of: "wg7"))
        #expect(transport.source == .unknown && transport.udpPort == nil)
        #expect(transport.detail?.contains("writable by others than root") == true, "\(transport)")
    }
}
