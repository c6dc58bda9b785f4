import Foundation

/// The test network of DESIGN.md: `client` (where members run) -- `wan` (a router) --
/// `server` (VPN peers and the services that report who they saw). "Public" addresses are
/// documentation ranges; the services sit on the server namespace's loopback.
public final class Topology: @unchecked Sendable {
    public let tag: String
    public let client: NetworkNamespace
    public let wan: NetworkNamespace
    public let server: NetworkNamespace
    /// The client's "physical" interface (the capture point for cleartext leaks).
    public let clientUplink: String
    let cleanup: Cleanup

    public static let clientAddress4 = "198.51.100.2"
    public static let clientAddress6 = "2001:db8:1::2"
    public static let serverUplink4 = "203.0.113.2"
    public static let serverUplink6 = "2001:db8:2::2"
    public static let service4 = "192.0.2.80"
    public static let service6 = "2001:db8:80::80"

    public init(cleanup: Cleanup) throws {
        try requireRoot()
        self.cleanup = cleanup
        tag = uniqueTag()
        client = try NetworkNamespace("vx\(tag)c", cleanup: cleanup)
        wan = try NetworkNamespace("vx\(tag)w", cleanup: cleanup)
        server = try NetworkNamespace("vx\(tag)s", cleanup: cleanup)
        clientUplink = "vx\(tag)u"
        try link(client, clientUplink, "198.51.100.2/24", "2001:db8:1::2/64",
                 to: wan, "vx\(tag)wc", "198.51.100.1/24", "2001:db8:1::1/64")
        try link(server, "vx\(tag)su", "203.0.113.2/24", "2001:db8:2::2/64",
                 to: wan, "vx\(tag)ws", "203.0.113.1/24", "2001:db8:2::1/64")
        try client.run(["ip", "route", "add", "default", "via", "198.51.100.1"])
        try client.run(["ip", "-6", "route", "add", "default", "via", "2001:db8:1::1"])
        try server.run(["ip", "route", "add", "default", "via", "203.0.113.1"])
        try server.run(["ip", "-6", "route", "add", "default", "via", "2001:db8:2::1"])
        try server.run(["ip", "addr", "add", "\(Self.service4)/32", "dev", "lo"])
        try server.run(["ip", "addr", "add", "\(Self.service6)/128", "dev", "lo", "nodad"])
        try wan.run(["ip", "route", "add", "\(Self.service4)/32", "via", Self.serverUplink4])
        try wan.run(["ip", "-6", "route", "add", "\(Self.service6)/128", "via", Self.serverUplink6])
        try wan.run(["sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"])
    }

    private func link(_ a: NetworkNamespace, _ aName: String, _ a4: String, _ a6: String,
                      to b: NetworkNamespace, _ bName: String, _ b4: String, _ b6: String) throws {
        try Command.run(["ip", "link", "add", aName, "netns", a.name, "type", "veth", "peer", "name", bName, "netns", b.name])
        for (ns, name, v4, v6) in [(a, aName, a4, a6), (b, bName, b4, b6)] {
            try ns.run(["ip", "addr", "add", v4, "dev", name])
            try ns.run(["ip", "addr", "add", v6, "dev", name, "nodad"])
            try ns.run(["ip", "link", "set", name, "up"])
        }
    }

    /// A namespace behind a veth of the client's, as a container's or a VM's: named
    /// vx<tag><letter>, its eth0 `network`.2/24 with its default route to `network`.1 on the
    /// client's end (vx<tag><letter>h), the client forwarding. Any NAT is the caller's.
    public func namespaceBehindVeth(_ letter: String, network: String) throws -> (namespace: NetworkNamespace, hostEnd: String) {
        let namespace = try NetworkNamespace("vx\(tag)\(letter)", cleanup: cleanup)
        let host = "vx\(tag)\(letter)h"
        try Command.run(["ip", "link", "add", host, "netns", client.name, "type", "veth", "peer", "name", "eth0", "netns", namespace.name])
        try client.run(["ip", "addr", "add", "\(network).1/24", "dev", host])
        try client.run(["ip", "link", "set", host, "up"])
        try namespace.run(["ip", "addr", "add", "\(network).2/24", "dev", "eth0"])
        try namespace.run(["ip", "link", "set", "eth0", "up"])
        try namespace.run(["ip", "route", "add", "default", "via", "\(network).1"])
        try client.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        return (namespace, host)
    }

    /// A WireGuard tunnel between client and server made of two wireguard-go processes
    /// (the reference peer). Tunnel `n` uses 10.99.n.0/24 and fd99:n::/64, server port 51820+n.
    public func addWireGuardTunnel(_ n: Int) throws -> WireGuardTunnel {
        try WireGuardTunnel(topology: self, number: n, cleanup: cleanup)
    }

    /// The reporting services on the server: TCP and UDP on both service addresses.
    public func startServices(port: Int = 8080) throws -> Services {
        try Services(topology: self, port: port, cleanup: cleanup)
    }
}

public final class WireGuardTunnel: @unchecked Sendable {
    public let clientInterface: String
    public let serverInterface: String
    public let clientAddress4: String
    public let clientAddress6: String
    let topology: Topology
    let number: Int
    let clientKey: String, serverKey: String
    private var clientDaemon: BackgroundProcess?
    private let cleanup: Cleanup

    init(topology: Topology, number: Int, cleanup: Cleanup) throws {
        self.topology = topology
        self.number = number
        self.cleanup = cleanup
        clientInterface = "vx\(topology.tag)t\(number)"
        serverInterface = "vx\(topology.tag)v\(number)"
        clientAddress4 = "10.99.\(number).2"
        clientAddress6 = "fd99:\(number)::2"
        clientKey = try Command.run(["wg", "genkey"]).trimmingCharacters(in: .whitespacesAndNewlines)
        serverKey = try Command.run(["wg", "genkey"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let clientPublic = try Command.run(["wg", "pubkey"], input: clientKey).trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try WireGuardGo.start(in: topology.server, serverInterface, cleanup: cleanup)
        try WireGuardGo.configure(serverInterface, in: topology.server, key: serverKey, listenPort: 51820 + number,
                                  peer: clientPublic, endpoint: nil, allowed: "\(clientAddress4)/32,\(clientAddress6)/128",
                                  addresses: ["10.99.\(number).1/24", "fd99:\(number)::1/64"])
        try bringClientUp()
    }

    /// (Re)creates the client side: wireguard-go, key, peer, addresses, link up.
    public func bringClientUp() throws {
        let serverPublic = try Command.run(["wg", "pubkey"], input: serverKey).trimmingCharacters(in: .whitespacesAndNewlines)
        clientDaemon = try WireGuardGo.start(in: topology.client, clientInterface, cleanup: cleanup)
        try WireGuardGo.configure(clientInterface, in: topology.client, key: clientKey, listenPort: nil, peer: serverPublic,
                                  endpoint: "\(Topology.serverUplink4):\(51820 + number)", allowed: "0.0.0.0/0,::/0",
                                  addresses: ["\(clientAddress4)/24", "\(clientAddress6)/64"])
    }

    /// Stops the client's wireguard-go: the interface disappears.
    public func deleteClientInterface() throws {
        clientDaemon?.stop()
        clientDaemon = nil
        try eventually("\(clientInterface) to disappear") {
            try topology.client.status(["ip", "link", "show", clientInterface]).status != 0
        }
    }

    public func setClientLink(up: Bool) throws {
        try topology.client.run(["ip", "link", "set", clientInterface, up ? "up" : "down"])
    }
}

/// wireguard-go (Debian's), the reference WireGuard peer: started in a namespace, in the
/// foreground so cleanup stops exactly it, and configured with `wg set`.
public enum WireGuardGo {
    public static func start(in namespace: NetworkNamespace, _ name: String, cleanup: Cleanup) throws -> BackgroundProcess {
        let process = try BackgroundProcess(namespace.enter + ["wireguard-go", "-f", name], cleanup: cleanup)
        try eventually("wireguard-go to create \(name)") {
            FileManager.default.fileExists(atPath: "/var/run/wireguard/\(name).sock")
        }
        cleanup.add("remove \(name).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(name).sock") }
        return process
    }

    public static func configure(_ name: String, in namespace: NetworkNamespace, key: String, listenPort: Int?,
                                 peer: String, endpoint: String?, allowed: String, addresses: [String]) throws {
        let keyFile = NSTemporaryDirectory() + "vx-\(uniqueTag()).key"
        try key.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        var arguments = ["wg", "set", name, "private-key", keyFile]
        if let listenPort { arguments += ["listen-port", String(listenPort)] }
        arguments += ["peer", peer, "allowed-ips", allowed]
        if let endpoint { arguments += ["endpoint", endpoint] }
        try Command.run(arguments)
        for address in addresses {
            try namespace.run(["ip", "addr", "add", address, "dev", name] + (address.contains(":") ? ["nodad"] : []))
        }
        try namespace.run(["ip", "link", "set", name, "up"])
    }

    /// A fresh key pair from `wg genkey` / `wg pubkey`: (private, public), base64.
    public static func keyPair() throws -> (String, String) {
        let key = try Command.run(["wg", "genkey"]).trimmingCharacters(in: .whitespacesAndNewlines)
        return (key, try Command.run(["wg", "pubkey"], input: key).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
