import Addresses
import Descriptors
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
            Endpoint(address: .v4(0), port: port).withSockaddr { Glibc.bind(fd, $0, $1) } == 0
        }

        func send(_ text: String, to port: UInt16) {
            _ = Array(text.utf8).withUnsafeBytes { bytes in
                Endpoint(address: .v4(0x7f00_0001), port: port).withSockaddr { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, $1) }
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
        let taken = try #require(Endpoint.local(of: holder.fd)).port
        let before = socket.port
        #expect {
            try socket.rebind(port: taken)
        } throws: { ($0 as? SystemError)?.code == EADDRINUSE }
        #expect(socket.port == before)
        // Still bound where it was: the port cannot be taken by anyone else.
        #expect(!Peer().bind(port: before))
    }

    /// The socket (an inode of sockfs, unique while it is open) behind a descriptor number.
    static func socketInode(_ fd: Int32) -> UInt64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? UInt64(info.st_ino) : 0
    }

    /// Whether any descriptor of this process still refers to the socket `inode`.
    static func isOpen(socketInode inode: UInt64) -> Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).contains { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) == "socket:[\(inode)]"
        }
    }

    /// Each socket the tunnel's socket owned is closed exactly when it should be: the old one
    /// once a move has put the new one under its number (the copy that woke its receiver
    /// included), the last one when the socket goes.
    @Test func movesAndReleaseLeaveNoSocketOpen() throws {
        var socket: UDPSocket? = try UDPSocket(port: 0, mark: nil)
        let number = socket!.fd
        let first = Self.socketInode(number)
        #expect(first != 0 && Self.isOpen(socketInode: first))
        try socket!.rebind(port: 0)
        try socket!.rebind(port: 0)
        let last = Self.socketInode(number)
        #expect(socket!.fd == number && last != first && last != 0)
        #expect(!Self.isOpen(socketInode: first), "the socket before the moves is still open")
        socket = nil
        #expect(!Self.isOpen(socketInode: last), "the released socket is still open")
    }

    /// What a socket received, datagram by datagram (runs cut where the kernel says), and
    /// how many of its receives were coalesced runs.
    static func receiveAll(_ socket: UDPSocket, count expected: Int) -> (datagrams: [[UInt8]], runs: Int) {
        let batch = DatagramBatch(capacity: 8, slotSize: RunningTunnel.coalescedSlotSize, headroom: 0)
        var datagrams: [[UInt8]] = []
        var runs = 0
        var fds = [pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)]
        // Waits only so that a lost datagram ends the test instead of hanging it.
        while datagrams.count < expected, poll(&fds, 1, 5_000) > 0, let count = batch.receive(from: socket) {
            for i in 0..<count {
                let length = batch.receivedLength(i), step = batch.segmentSize(i)
                if step < length { runs += 1 }
                for start in stride(from: 0, to: length, by: step) {
                    datagrams.append(Array(batch.slot(i)[start..<min(start + step, length)]))
                }
            }
        }
        return (datagrams, runs)
    }

    /// Same-sized datagrams to one destination leave as one segmented send (UDP GSO) and
    /// arrive as one coalesced run (UDP GRO) that cuts back into exactly what was sent, in
    /// order; a shorter datagram or another destination ends a run.
    @Test func runsLeaveSegmentedAndArriveCoalescedInOrder() throws {
        let sender = try UDPSocket(port: 0, mark: nil)
        let first = try UDPSocket(port: 0, mark: nil)
        let second = try UDPSocket(port: 0, mark: nil)
        #expect(sender.segmentsSends, "this kernel must support UDP_SEGMENT")
        #expect(first.receivesCoalesced)
        let to1 = Endpoint(address: .v4(0x7f00_0001), port: first.port)
        let to2 = Endpoint(address: .v4(0x7f00_0001), port: second.port)
        // 0..<30: 200 bytes to the first; 30: 120 bytes (ends the run); 31..<35: the second;
        // 35..<40: the first again.
        let plan: [(Int, Endpoint)] = (0..<40).map { i in (i == 30 ? 120 : 200, (31..<35).contains(i) ? to2 : to1) }
        let batch = DatagramBatch(capacity: 64, slotSize: 256, headroom: 0)
        for (i, (length, to)) in plan.enumerated() {
            let slot = batch.slot(i)
            for j in 0..<length { slot[j] = UInt8(truncatingIfNeeded: i &+ j) }
            batch.enqueue(slot: i, range: 0..<length, to: to, dualStack: sender.isDualStack)
        }
        batch.flush(to: sender)
        let expected = { (indices: [Int]) in indices.map { i in (0..<plan[i].0).map { UInt8(truncatingIfNeeded: i &+ $0) } } }
        let got1 = Self.receiveAll(first, count: 36)
        #expect(got1.datagrams == expected(Array(0..<31) + Array(35..<40)))
        #expect(got1.runs >= 2, "the runs to the first socket arrived coalesced")
        let got2 = Self.receiveAll(second, count: 4)
        #expect(got2.datagrams == expected(Array(31..<35)))
        #expect(sender.segmentsSends, "no send was refused")
    }
}
