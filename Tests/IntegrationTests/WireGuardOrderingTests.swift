import Foundation
import NetTestSupport
import Testing

/// The parallel path keeps a flow in order: our engine on both ends shares each batch's
/// encryption and decryption with a helper thread, sends runs as one (UDP GSO) and takes
/// them coalesced (UDP GRO), and still a numbered UDP flow through the tunnel arrives
/// without one datagram overtaking another.
@Suite(.serialized) struct WireGuardOrderingTests {
    /// Sends COUNT numbered datagrams of SIZE bytes as fast as it can, then END markers.
    static let sender = """
        import socket, struct, sys, time
        host, port, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        pad = bytes(size - 8)
        for i in range(count):
            while True:
                try:
                    s.sendto(struct.pack("!Q", i) + pad, (host, port)); break
                except OSError:
                    time.sleep(0.0005)  # a full queue: wait, the receiver counts losses anyway
        for _ in range(20):
            s.sendto(b"END", (host, port)); time.sleep(0.05)
        """

    /// Reports how many numbered datagrams arrived and how many arrived after a higher number.
    static let receiver = """
        import socket, struct, sys
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.bind((sys.argv[1], int(sys.argv[2])))
        print("listening", flush=True)
        s.settimeout(30)
        received = inversions = 0
        highest = -1
        while True:
            data = s.recv(65536)
            if data == b"END":
                break
            n = struct.unpack("!Q", data[:8])[0]
            received += 1
            if n < highest:
                inversions += 1
            highest = max(highest, n)
        print(f"received {received} inversions {inversions}", flush=True)
        """

    @Test func aFlowIsNotReorderedByTheParallelPath() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let attack = try PythonScript.write(PythonScript.wireGuardAttack, cleanup: cleanup)
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        let server = try OurTunnel(in: net.server, name: "vx\(net.tag)o", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(serverKey)
            ListenPort = 51975
            Address = 10.86.0.1/24
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.86.0.2/32
            """)
        let client = try OurTunnel(in: net.client, name: "vx\(net.tag)c", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(clientKey)
            Address = 10.86.0.2/24
            [Peer]
            PublicKey = \(serverPublic)
            Endpoint = \(Topology.serverUplink4):51975
            AllowedIPs = 10.86.0.0/24
            """)
        try net.client.run(["ping", "-c", "1", "-W", "5", "10.86.0.1"])
        let directory = NSTemporaryDirectory() + "vx-\(net.tag)-order"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        cleanup.add("remove \(directory)") { try? FileManager.default.removeItem(atPath: directory) }
        try Self.sender.write(toFile: directory + "/send.py", atomically: true, encoding: .utf8)
        try Self.receiver.write(toFile: directory + "/receive.py", atomically: true, encoding: .utf8)
        let receiving = try BackgroundProcess(net.server.enter + ["python3", directory + "/receive.py", "10.86.0.1", "9009"], cleanup: cleanup)
        try eventually("the receiver to listen") { receiving.output.contains("listening") }
        try net.client.run(["python3", directory + "/send.py", "10.86.0.1", "9009", "60000", "1300"])
        #expect(receiving.waitForExit(seconds: 60))
        let report = receiving.output.split(separator: "\n").last { $0.hasPrefix("received") } ?? ""
        let numbers = report.split(separator: " ").compactMap { Int($0) }
        try #require(numbers.count == 2, "receiver said: \(receiving.output)")
        // Losses are allowed (UDP, a full TUN queue); overtaking is not. What arrives of
        // the 60,000 varies with the machine: 4,334 to 11,818 in four runs on a 2-core
        // machine, idle and loaded (a floor of 5,000 failed a fresh-clone CI with 4,318).
        // A thousand in order is at least 16 batches (of up to 64), shared with the helpers.
        #expect(numbers[0] >= 1_000, "\(report)")
        #expect(numbers[1] == 0, "\(report)")
        // The helper threads did a share of the cryptography on both ends: the parallel
        // path was taken, not only the loops.
        func helped(_ tunnel: OurTunnel, _ key: String) throws -> Int {
            let stats = try Command.run(["python3", attack, "stats", "/var/run/wireguard/\(tunnel.name).sock"])
            let line = stats.split(separator: "\n").first { $0.hasPrefix(key + "=") } ?? ""
            return Int(line.split(separator: "=").last ?? "") ?? 0
        }
        #expect(try helped(client, "helper_sealed") > 1000)
        #expect(try helped(server, "helper_opened") > 1000)
    }
}
