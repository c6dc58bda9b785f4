import Addresses
import Glibc
import Monotonic
import Synchronization
import Testing
import WireGuard
@testable import WireGuardDevice

/// DemandControl's actions on a real engine, with a real socket on loopback and a second
/// engine as the server: down, nothing to send (the file's keepalive set aside); a member
/// sends an initiation at once; the handshake makes it "up"; held down, the session and its
/// keys are gone and the keepalive with them.
@Suite(.serialized) struct DemandControlTests {
    /// The server's socket: receives what the client's engine sends.
    final class Server {
        let fd: Int32
        let port: UInt16

        init() {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue | SOCK_NONBLOCK.rawValue), 0)
            self.fd = fd
            _ = Endpoint(address: .v4(0x7f00_0001), port: 0).withSockaddr { Glibc.bind(fd, $0, $1) }
            port = Endpoint.local(of: fd)?.port ?? 0
        }

        deinit { close(fd) }

        /// What arrived within about half a second.
        func received() -> [[UInt8]] {
            var datagrams: [[UInt8]] = []
            for _ in 0..<50 {
                var buffer = [UInt8](repeating: 0, count: 2048)
                let n = recv(fd, &buffer, buffer.count, 0)
                if n > 0 { datagrams.append(Array(buffer[0..<n])); continue }
                usleep(10_000)
            }
            return datagrams
        }
    }

    @Test func downSilentUpOnAMemberHeldDownForgetsTheSession() throws {
        let server = Server()
        let clientKey = PrivateKey.generate(), serverKey = PrivateKey.generate()
        let serverEndpoint = Endpoint(address: IPAddress("127.0.0.1")!, port: server.port)
        let engine = Engine(configuration: InterfaceConfiguration(privateKey: clientKey, peers: [
            PeerConfiguration(publicKey: serverKey.publicKey, endpoint: serverEndpoint, allowedIPs: [IPPrefix("0.0.0.0/0")!], persistentKeepalive: 25),
        ]))
        let responder = Engine(configuration: InterfaceConfiguration(privateKey: serverKey, peers: [
            PeerConfiguration(publicKey: clientKey.publicKey, allowedIPs: [IPPrefix("10.9.0.2/32")!]),
        ]))
        let udp = try UDPSocket(port: 0, mark: nil, offloads: false)
        let transitions = Mutex<[String]>([])
        var clock = MonotonicInstant.seconds(100)
        let wall = WallClock(seconds: 1_800_000_000, nanoseconds: 0)
        let demand = try DemandControl(settings: .init(onDemand: true, idle: .seconds(60)), engine: engine, udp: udp, now: clock) { phase, why in
            transitions.withLock { $0.append("\(phase.rawValue): \(why)") }
        }

        // Down: the peer is there (status shows it), without its keepalive; nothing is due.
        #expect(engine.status.peers.map(\.persistentKeepalive) == [nil])
        #expect(engine.tick(now: clock + .seconds(300), wall: wall).isEmpty)
        #expect(!demand.acceptsInbound && demand.snapshot.phase == .downOnDemand)
        #expect(server.received().isEmpty)

        // A member: the keepalive is back and an initiation leaves at once.
        clock = clock + .seconds(1)
        demand.membersChanged(present: true, now: clock)
        #expect(demand.acceptsInbound && demand.snapshot.phase == .connecting)
        #expect(engine.status.peers.map(\.persistentKeepalive) == [25])
        let sent = server.received()
        #expect(sent.count == 1 && sent.first?.first == MessageType.initiation.rawValue && sent.first?.count == MessageSize.initiation, "\(sent.map(\.count))")

        // The server answers; the next tick sees the handshake: up.
        var initiation = try #require(sent.first)
        let response: [UInt8] = try initiation.withUnsafeMutableBytes { buffer in
            guard case let .control(datagrams) = responder.decapsulate(buffer: buffer, datagram: 0..<buffer.count, from: Endpoint(address: IPAddress("127.0.0.1")!, port: udp.port),
                                                                        underLoad: false, now: clock, wall: wall), let first = datagrams.first else {
                throw TestFailure("the server did not answer the initiation")
            }
            return first.bytes
        }
        var answer = response
        _ = answer.withUnsafeMutableBytes { engine.decapsulate(buffer: $0, datagram: 0..<$0.count, from: serverEndpoint, underLoad: false, now: clock, wall: wall) }
        demand.tick(now: clock)
        #expect(demand.snapshot.phase == .up && demand.snapshot.reason == .member)
        #expect(engine.status.peers.first?.lastHandshake != nil)

        // vpnctl down: the session goes (a packet would wait for a new handshake), the keepalive
        // too; the peer stays, and so do its byte counters (Engine.resetSessions).
        let counted = try #require(engine.status.peers.first)
        #expect(counted.txBytes > 0, "the initiation was counted")
        demand.holdDown(now: clock + .seconds(2))
        #expect(engine.status.peers.first?.txBytes == counted.txBytes && engine.status.peers.first?.rxBytes == counted.rxBytes,
                "the counters go on across a teardown")
        #expect(demand.snapshot.phase == .heldDown && !demand.acceptsInbound)
        #expect(engine.status.peers.first?.lastHandshake == nil && engine.status.peers.map(\.persistentKeepalive) == [nil])
        var packet = [UInt8](repeating: 0, count: 16) + [0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 9, 0, 2, 192, 0, 2, 80] + [UInt8](repeating: 0, count: 48)
        let outcome = packet.withUnsafeMutableBytes { engine.encapsulate(buffer: $0, packet: 16..<36, now: clock + .seconds(3), wall: wall) }
        guard case .queued = outcome else { Issue.record("the old session still encrypts: \(outcome)"); return }
        #expect(transitions.withLock { $0 } == ["connecting: a member appeared", "up: a member appeared", "down (vpnctl down): vpnctl down"])
    }

    /// An always-up tunnel is connecting from its start, whatever the ticks, until the engine
    /// has a handshake; then up, reported once (the log line).
    @Test func alwaysUpIsConnectingUntilTheFirstHandshake() throws {
        let clientKey = PrivateKey.generate(), serverKey = PrivateKey.generate()
        // The test carries the handshake between the engines itself: nothing is sent there.
        let serverEndpoint = Endpoint(address: IPAddress("127.0.0.1")!, port: 9)
        let engine = Engine(configuration: InterfaceConfiguration(privateKey: clientKey, peers: [
            PeerConfiguration(publicKey: serverKey.publicKey, endpoint: serverEndpoint, allowedIPs: [IPPrefix("0.0.0.0/0")!]),
        ]))
        let responder = Engine(configuration: InterfaceConfiguration(privateKey: serverKey, peers: [
            PeerConfiguration(publicKey: clientKey.publicKey, allowedIPs: [IPPrefix("10.9.0.2/32")!]),
        ]))
        let udp = try UDPSocket(port: 0, mark: nil, offloads: false)
        let transitions = Mutex<[String]>([])
        let clock = MonotonicInstant.seconds(100)
        let wall = WallClock(seconds: 1_800_000_000, nanoseconds: 0)
        let demand = try DemandControl(settings: .alwaysUp, engine: engine, udp: udp, now: clock) { phase, why in
            transitions.withLock { $0.append("\(phase.rawValue): \(why)") }
        }
        #expect(demand.snapshot.phase == .connecting && demand.acceptsInbound && demand.isRunning)
        demand.tick(now: clock + .seconds(15))
        #expect(demand.snapshot.phase == .connecting, "15 s without a handshake is not up")

        // The first handshake (a persistent keepalive or a member's first packet starts it).
        engine.keepalive(serverKey.publicKey, now: clock, wall: wall)
        var initiation = try #require(engine.drainOutput().first).bytes
        let response: [UInt8] = try initiation.withUnsafeMutableBytes { buffer in
            guard case let .control(datagrams) = responder.decapsulate(buffer: buffer, datagram: 0..<buffer.count, from: Endpoint(address: IPAddress("127.0.0.1")!, port: udp.port),
                                                                        underLoad: false, now: clock, wall: wall), let first = datagrams.first else {
                throw TestFailure("the server did not answer the initiation")
            }
            return first.bytes
        }
        var answer = response
        _ = answer.withUnsafeMutableBytes { engine.decapsulate(buffer: $0, datagram: 0..<$0.count, from: serverEndpoint, underLoad: false, now: clock, wall: wall) }
        demand.tick(now: clock + .seconds(16))
        #expect(demand.snapshot.phase == .up && demand.snapshot.since == clock + .seconds(16))
        #expect(transitions.withLock { $0 } == ["up: vpnd started the tunnel"])
    }

    /// Down on demand, the first packet for a peer brings the tunnel up, and what the device
    /// reports (vpnd's log line) names its destination as status does.
    @Test func aPacketsBringUpIsReportedWithItsDestination() throws {
        let server = Server()
        let engine = Engine(configuration: InterfaceConfiguration(privateKey: PrivateKey.generate(), peers: [
            PeerConfiguration(publicKey: PrivateKey.generate().publicKey, endpoint: Endpoint(address: IPAddress("127.0.0.1")!, port: server.port),
                              allowedIPs: [IPPrefix("192.0.2.0/24")!]),
        ]))
        let udp = try UDPSocket(port: 0, mark: nil, offloads: false)
        let transitions = Mutex<[String]>([])
        let demand = try DemandControl(settings: .init(onDemand: true), engine: engine, udp: udp, now: .seconds(100)) { phase, why in
            transitions.withLock { $0.append("\(phase.rawValue): \(why)") }
        }
        #expect(demand.snapshot.why == "vpnd started; no member or packet yet")
        let packet: [UInt8] = [0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 9, 0, 2, 192, 0, 2, 80]
        #expect(packet.withUnsafeBytes { demand.offer($0, now: .seconds(101)) })
        #expect(demand.snapshot.phase == .connecting)
        #expect(transitions.withLock { $0 } == ["connecting: a packet was routed into the tunnel (to 192.0.2.80)"])
        #expect(server.received().first?.first == MessageType.initiation.rawValue, "the bring-up's initiation left")
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
