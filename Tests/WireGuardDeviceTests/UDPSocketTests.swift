import Addresses
import Foundation
import Glibc
import Testing
import WireGuard
@testable import WireGuardDevice

/// `wg set IFACE listen-port N` on a running engine: the socket moves under the same
/// descriptor number while a thread is blocked receiving on it, and a port that cannot be
/// taken changes nothing. Real sockets on loopback.
@Suite(.serialized) struct UDPSocketTests {
    /// A plain UDP socket to send from (or to hold a port).
    final class Peer {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        deinit { close(fd) }

        func bind(port: UInt16) -> Bool {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            return withUnsafePointer(to: &sin) { Glibc.bind(fd, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_in>.size)) } == 0
        }

        func send(_ text: String, to port: UInt16) {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
            _ = Array(text.utf8).withUnsafeBytes { bytes in
                withUnsafePointer(to: &sin) { sendto(fd, bytes.baseAddress, bytes.count, 0, UnsafeRawPointer($0).assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    /// What a receiving thread got, datagram by datagram (empty ones are what a moved
    /// socket wakes its receiver with; the engine skips them).
    final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var texts: [String] = []
        func add(_ text: String) { lock.withLock { texts.append(text) } }
        var all: [String] { lock.withLock { texts } }
    }

    static func wait(for condition: () -> Bool) -> Bool {
        for _ in 0..<200 where !condition() { usleep(10_000) }
        return condition()
    }

    @Test func movesToAnotherPortUnderABlockedReceiver() throws {
        let socket = try UDPSocket(port: 0, mark: nil)
        let fd = socket.fd, first = socket.port
        let received = Received()
        let stop = Received()
        let receiver = Thread {
            let batch = DatagramBatch(capacity: 4, slotSize: 256, headroom: 0)
            while stop.all.isEmpty {
                guard let count = batch.receive(from: socket) else { continue }
                for i in 0..<count where batch.receivedLength(i) > 0 {
                    received.add(String(decoding: batch.slot(i)[0..<batch.receivedLength(i)], as: UTF8.self))
                }
            }
        }
        receiver.start()
        let peer = Peer()
        peer.send("before", to: first)
        #expect(Self.wait { received.all == ["before"] })
        // The receiver is blocked in recvmmsg on the old socket when it moves.
        try socket.rebind(port: 0)
        let second = socket.port
        #expect(second != first && socket.fd == fd)
        peer.send("after", to: second)
        #expect(Self.wait { received.all == ["before", "after"] }, "\(received.all)")
        // The old port is free again: another socket can take it.
        #expect(Peer().bind(port: first))
        stop.add("stop")
        socket.shutdown()
        #expect(Self.wait { receiver.isFinished })
    }

    @Test func aPortInUseChangesNothing() throws {
        let socket = try UDPSocket(port: 0, mark: nil)
        let holder = Peer()
        #expect(holder.bind(port: 0))
        var sin = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &sin) { getsockname(holder.fd, UnsafeMutableRawPointer($0).assumingMemoryBound(to: sockaddr.self), &length) }
        let taken = UInt16(bigEndian: sin.sin_port)
        let before = socket.port
        #expect {
            try socket.rebind(port: taken)
        } throws: { ($0 as? SystemCallError)?.code == EADDRINUSE }
        #expect(socket.port == before)
        // Still bound where it was: the port cannot be taken by anyone else.
        #expect(!Peer().bind(port: before))
    }
}
