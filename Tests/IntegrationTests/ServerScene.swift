import Foundation
import NetTestSupport

/// Where the tests of several servers start: the topology and its services, the probe, the
/// client's key, vpnd (not started yet) and the built-in tunnel's interface name; servers,
/// client files, relays and the policy are added by each test.
struct ServerScene {
    let cleanup: Cleanup
    let net: Topology
    let services: Services
    let probe: String
    let clientKey: String
    let clientPublic: String
    let interface: String
    let daemon: DaemonHarness

    init(cleanup: Cleanup) throws {
        self.cleanup = cleanup
        net = try Topology(cleanup: cleanup)
        services = try net.startServices()
        probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        (clientKey, clientPublic) = try WireGuardGo.keyPair()
        interface = "vx\(net.tag)b"
        daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
    }

    /// A `vpn-server` in the server namespace that takes the client's key: 10.SUBNET.0.1 on
    /// its tunnel, the client 10.SUBNET.0.2. Returns it and its public key.
    func server(_ letter: String, port: Int, subnet: Int) throws -> (OurTunnel, String) {
        let (key, publicKey) = try WireGuardGo.keyPair()
        let tunnel = try OurTunnel(in: net.server, name: "vx\(net.tag)\(letter)", cleanup: cleanup, config: """
            [Interface]
            PrivateKey = \(key)
            ListenPort = \(port)
            Address = 10.\(subnet).0.1/24
            [Peer]
            PublicKey = \(clientPublic)
            AllowedIPs = 10.\(subnet).0.2/32
            """)
        return (tunnel, publicKey)
    }

    /// A file beside the policy (mode 0600, as vpnd wants key files); its path.
    func write(_ name: String, _ text: String) -> String { Self.write(daemon, name, text) }

    static func write(_ daemon: DaemonHarness, _ name: String, _ text: String) -> String {
        let path = URL(fileURLWithPath: daemon.policyDirectory + "/../\(name).conf").standardized.path
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        return path
    }

    /// The client's file for one server: the client's key, the server's key and port.
    func clientFile(_ name: String, subnet: Int, serverPublic: String, port: Int) -> String {
        write(name, "[Interface]\nPrivateKey = \(clientKey)\nAddress = 10.\(subnet).0.2/24\n[Peer]\nPublicKey = \(serverPublic)\nEndpoint = \(Topology.serverUplink4):\(port)\nAllowedIPs = 0.0.0.0/0\n")
    }

    /// Profile `work` with `tunnel = { TUNNEL, interface = ... }` and the profile's `more`
    /// lines; the tunnel's wg socket goes at the end.
    func policy(tunnel: String, more: String = "") throws {
        try daemon.writePolicy("[profile.work]\ntunnel = { \(tunnel), interface = \"\(interface)\" }\n" + more)
        BuiltInTunnelPeer.removeSocketAtCleanup(interface, cleanup)
    }

    /// A relay in the server namespace from `listen` to the local `target` port that holds
    /// every datagram `delay` seconds each way (a number, or a file holding one).
    func relay(listen: Int, target: Int, delay: String) throws {
        let script = NSTemporaryDirectory() + "vx-\(uniqueTag())-relay.py"
        try Self.delayRelay.write(toFile: script, atomically: true, encoding: .utf8)
        cleanup.add("remove \(script)") { try? FileManager.default.removeItem(atPath: script) }
        let process = try BackgroundProcess(net.server.enter + ["python3", script, String(listen), String(target), delay], cleanup: cleanup)
        try eventually("the relay to listen") { try net.server.run(["ss", "-lunH"]).contains(":\(listen)") || !process.isRunning }
    }

    /// The address the service sees for a member's TCP connection.
    func memberSees() throws -> String {
        try Command.run((try daemon.vpnexec(profile: "work", [])) + ["python3", probe, "tcp", Topology.service4, "8080"]).trimmed
    }

    /// A container's network namespace as nspawn `--network-veth`, podman and docker make
    /// it: a veth to the client namespace (host end vx<tag><letter>h, `network`.1 there,
    /// `network`.2 inside), the host forwarding, the runtime's NAT out of the uplink alone.
    /// Its members are the profile's by their cgroup (`containerMember`), not by anything here.
    func container(_ letter: String, network: String) throws -> NetworkNamespace {
        let namespace = try net.namespaceBehindVeth(letter, network: network).namespace
        try NftCLI.apply("""
            table inet vxtestnat {
                chain out { type nat hook postrouting priority srcnat; oifname "\(net.clientUplink)" masquerade; }
            }
            """, in: net.client)
        return namespace
    }

    /// A member of `work` in `container` sending UDP to the service's `port` all along.
    func containerMember(_ container: NetworkNamespace, port: Int) throws -> BackgroundProcess {
        try BackgroundProcess(try daemon.vpnexec(profile: "work", container.enter + ["python3", probe, "udp-loop", Topology.service4, String(port)]), cleanup: cleanup)
    }

    /// A member sending UDP to the service all along.
    func sendingMember() throws -> BackgroundProcess {
        try BackgroundProcess(try daemon.vpnexec(profile: "work", ["python3", probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
    }

    /// A UDP relay that holds every datagram DELAY seconds in each direction (one client);
    /// DELAY is a number or a file holding one, read for every datagram.
    static let delayRelay = """
        import os, socket, sys, threading
        listen, target, delay_arg = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
        def delay():
            return float(open(delay_arg).read()) if os.path.exists(delay_arg) else float(delay_arg)
        front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); front.bind(("0.0.0.0", listen))
        back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); back.bind(("127.0.0.1", 0))
        client = [None]
        def later(sock, data, addr):
            t = threading.Timer(delay(), lambda: sock.sendto(data, addr)); t.daemon = True; t.start()
        def answers():
            while True:
                data, _ = back.recvfrom(65535)
                if client[0]: later(front, data, client[0])
        threading.Thread(target=answers, daemon=True).start()
        while True:
            data, addr = front.recvfrom(65535)
            client[0] = addr
            later(back, data, ("127.0.0.1", target))
        """
}
