import DNS
import Descriptors
import Foundation
import Glibc
import Names
import XCTest

/// The varlink server with a loop the test drives: each handler runs when the test says, so
/// what the server does with a connection's bytes is seen step by step, on a real socket.
final class NameServerTests: XCTestCase {
    final class SteppedLoop: NameServerLoop {
        var handlers: [DescriptorNumber: (Int16) -> Void] = [:]
        func watch(_ fd: DescriptorNumber, events: Int16, _ handler: @escaping (Int16) -> Void) { handlers[fd] = handler }
        func setEvents(_ fd: DescriptorNumber, _ events: Int16) {}
        func unwatch(_ fd: DescriptorNumber) { handlers[fd] = nil }
        func after(_ delay: Swift.Duration, _ body: @escaping () -> Void) -> Int { 0 }
        /// Every handler once, as if everything were ready.
        func turn() { for handler in Array(handlers.values) { handler(Int16(POLLIN)) } }
    }

    private var directory = ""

    override func setUp() {
        directory = "/tmp/vx-names-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func connect(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        XCTAssertEqual(result, 0)
        return fd
    }

    private func read(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    func testAnswersThroughAskAndRefusesWhatBreaksTheProtocol() throws {
        let loop = SteppedLoop()
        var asked: [[UInt8]] = []
        let path = directory + "/resolve/work"
        let server = try NameServer(path: path, loop: loop) { query, _, answer in
            asked.append(query)
            var message = try! DNSMessage(parsing: query)
            message.header.isResponse = true
            if message.questions[0].type == .a {
                message.answers = [DNSRecord(name: message.questions[0].name, ttl: 60, data: .address(.v4(0xc000_020a)))]
            }
            answer(message.encoded())
        }
        defer { server.close() }
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int, 0o666)

        let client = connect(path)
        defer { close(client) }
        loop.turn()
        let call = #"{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"tunneled.example","flags":0}}"#
        _ = (Array(call.utf8) + [0]).withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
        loop.turn()
        XCTAssertEqual(asked.count, 2, "A and AAAA")
        XCTAssertEqual(read(client), #"{"parameters":{"addresses":[{"family":2,"address":[192,0,2,10]}],"name":"tunneled.example","flags":1}}"# + "\0")
        XCTAssertEqual(server.counters.answered, 1)

        let broken = connect(path)
        defer { close(broken) }
        loop.turn()
        _ = (Array("not json".utf8) + [0]).withUnsafeBytes { send(broken, $0.baseAddress, $0.count, 0) }
        loop.turn()
        XCTAssertNil(read(broken), "closed without a reply")
        XCTAssertEqual(server.counters.refused, 1)

        let long = connect(path)
        defer { close(long) }
        loop.turn()
        let chunk = [UInt8](repeating: 0x20, count: 16384)
        for _ in 0..<5 {
            _ = chunk.withUnsafeBytes { send(long, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            loop.turn()
        }
        XCTAssertEqual(server.counters.refused, 2, "a message past 64 KiB")

        server.admit = { _ in false }
        let stranger = connect(path)
        defer { close(stranger) }
        loop.turn()
        XCTAssertEqual(server.counters.refused, 3, "not a member")
    }
}
