import Foundation
import NetTestSupport

/// Debian's wg-quick script, unchanged, with `vpn-server` as its userspace implementation
/// (WG_QUICK_USERSPACE_IMPLEMENTATION), run inside a namespace: the way an administrator
/// uses our engine as a drop-in for wireguard-go on a host without the kernel module.
final class WgQuick: @unchecked Sendable {
    let name: String
    let namespace: NetworkNamespace
    /// DIR/NAME.conf: wg-quick takes the interface's name from the file's.
    let configPath: String

    init(in namespace: NetworkNamespace, name: String, config: String, cleanup: Cleanup) throws {
        self.name = name
        self.namespace = namespace
        let directory = NSTemporaryDirectory() + "vx-\(uniqueTag())-wgquick"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        configPath = directory + "/\(name).conf"
        _ = FileManager.default.createFile(atPath: configPath, contents: Data(config.utf8), attributes: [.posixPermissions: 0o600])
        cleanup.add("remove \(directory)") { try? FileManager.default.removeItem(atPath: directory) }
        // Whatever happened, the engine goes with its interface; one that outlived it is killed by pid.
        cleanup.add("take \(name) down") { [namespace] in
            let engine = DetachedEngine.find(interface: name)
            _ = try? namespace.status(["ip", "link", "delete", name])
            if let engine, !engine.waitForExit(seconds: 5) { kill(engine.pid, SIGKILL) }
            try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(name).sock")
        }
    }

    /// `wg-quick up|down FILE`: its output ("[#] ..." lines) and status.
    func run(_ command: String) throws -> CommandResult {
        try Command.status(namespace.enter + ["wg-quick", command, configPath], environment: [
            "PATH": "\(Binaries.directory):/usr/sbin:/usr/bin:/sbin:/bin",
            "WG_QUICK_USERSPACE_IMPLEMENTATION": "vpn-server",
        ])
    }
}

/// A vpn-server that went into the background (as wg-quick starts it): not the test's
/// child, so found by its command line and watched through /proc.
struct DetachedEngine {
    let pid: Int32

    /// The process whose arguments are exactly `vpn-server NAME`.
    static func find(interface: String) -> DetachedEngine? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            // bash (wg-quick) passes the name it ran as argv[0].
            let program = arguments.first ?? ""
            if arguments.count == 2, program == "vpn-server" || program.hasSuffix("/vpn-server"), arguments[1] == interface {
                return DetachedEngine(pid: pid)
            }
        }
        return nil
    }

    /// /proc/PID/status as key -> value.
    var status: [String: String] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return fields
    }

    /// Gone, or a zombie: it has exited either way.
    var hasExited: Bool {
        let state = status["State"]
        return state == nil || state!.hasPrefix("Z")
    }

    func waitForExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !hasExited && Date() < deadline { usleep(20_000) }
        return hasExited
    }
}

/// What the kernel and the process say about a running engine's privileges.
enum EnginePrivileges {
    /// CAP_NET_ADMIN (12) and CAP_NET_BIND_SERVICE (10), and nothing else.
    static let kept = "0000000000001400"

    /// Each capability set and no_new_privs, from /proc/PID/status.
    static func of(pid: Int32) -> [String: String] {
        let status = DetachedEngine(pid: pid).status
        return ["CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb", "NoNewPrivs"].reduce(into: [:]) { $0[$1] = status[$1] }
    }

    static let expected = ["CapEff": kept, "CapPrm": kept, "CapBnd": kept, "CapInh": "0000000000000000",
                           "CapAmb": "0000000000000000", "NoNewPrivs": "1"]
}

/// The `wg` interfaces whose sockets answer, as `wg show interfaces` lists them.
func wgInterfaces() throws -> [String] {
    try Command.run(["wg", "show", "interfaces"]).split(whereSeparator: \.isWhitespace).map(String.init)
}

/// A wireguard-go server in `topology.server` for one client of ours (tunnel addresses
/// 10.N.0.1 and fdN::1; the client's 10.N.0.2 and fdN::2), and the client's wg-quick file.
struct WireGuardGoServer {
    let name: String
    let publicKey: String
    let subnet: Int
    let port: Int
    let clientKey: String

    init(_ topology: Topology, subnet: Int, port: Int, cleanup: Cleanup) throws {
        let (serverKey, serverPublic) = try WireGuardGo.keyPair()
        let (clientKey, clientPublic) = try WireGuardGo.keyPair()
        name = "vx\(topology.tag)g"
        publicKey = serverPublic
        self.subnet = subnet
        self.port = port
        self.clientKey = clientKey
        _ = try WireGuardGo.start(in: topology.server, name, cleanup: cleanup)
        try WireGuardGo.configure(name, in: topology.server, key: serverKey, listenPort: port, peer: clientPublic, endpoint: nil,
                                  allowed: "10.\(subnet).0.2/32,fd\(subnet)::2/128", addresses: ["10.\(subnet).0.1/24", "fd\(subnet)::1/64"])
    }

    /// The client's file: its key and addresses, `interfaceLines` of wg-quick's, this
    /// server as its peer with `allowed` (default: the tunnel's subnets) and `peerLines`.
    func clientConfig(_ interfaceLines: [String] = [], allowed: String? = nil, peerLines: [String] = []) -> String {
        """
        [Interface]
        PrivateKey = \(clientKey)
        Address = 10.\(subnet).0.2/24, fd\(subnet)::2/64
        \(interfaceLines.joined(separator: "\n"))
        [Peer]
        PublicKey = \(publicKey)
        Endpoint = \(Topology.serverUplink4):\(port)
        AllowedIPs = \(allowed ?? "10.\(subnet).0.0/24, fd\(subnet)::/64")
        \(peerLines.joined(separator: "\n"))
        """
    }
}

/// Our client (`vpn-server --config`) dialing a wireguard-go server, as
/// OurClientAndWireGuardGoServer, with extra [Interface] lines of wg-quick's (`Table = off`).
func ourClient(_ topology: Topology, subnet: Int, port: Int, allowed: String, interfaceLines: [String],
               cleanup: Cleanup) throws -> OurTunnel {
    let server = try WireGuardGoServer(topology, subnet: subnet, port: port, cleanup: cleanup)
    return try OurTunnel(in: topology.client, name: "vx\(topology.tag)o", cleanup: cleanup,
                         config: server.clientConfig(interfaceLines, allowed: allowed))
}
