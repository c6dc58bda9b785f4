import Foundation
import NetTestSupport
import Testing

/// `vpn-server --config` and the wg-quick keys beyond WireGuard's own: Table is honoured as
/// wg-quick honours it; DNS and SaveConfig are said to be not applied, once each, and
/// nothing is applied; a key file others may read gets wg-quick's warning. The engine
/// keeps only the capabilities it needs.
@Suite(.serialized) struct WireGuardDropInFileTests {
    /// Routes and rules the client namespace holds for `interface`, for comparing: every
    /// route through it in any table, and every rule.
    static func routing(_ namespace: NetworkNamespace, _ interface: String) throws -> (routes: String, rules: String) {
        let routes = try ["-4", "-6"].map { try namespace.run(["ip", $0, "route", "show", "table", "all", "dev", interface]) }.joined()
        let rules = try ["-4", "-6"].map { try namespace.run(["ip", $0, "rule"]) }.joined()
        return (routes, rules)
    }

    /// A client whose AllowedIPs include the defaults and a "public" prefix, with
    /// `Table = off`: no route to any of them (only the kernel's own for the addresses), no
    /// rule, no fwmark; the peer's subnet still answers through the address's route.
    @Test func tableOffAddsNoRoutes() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let rulesBefore = try Self.routing(net.client, "lo").rules
        let ours = try ourClient(net, subnet: 97, port: 51915, allowed: "0.0.0.0/0, ::/0, 192.0.2.0/24",
                                 interfaceLines: ["Table = off"], cleanup: cleanup)
        let (routes, rules) = try Self.routing(net.client, ours.name)
        for line in routes.split(separator: "\n") {
            #expect(line.contains("proto kernel"), "a route not of the kernel's own: \(line)")
        }
        #expect(!routes.contains("default") && !routes.contains("192.0.2.0/24"), "\(routes)")
        #expect(rules == rulesBefore, "\(rules)")
        #expect(try !["-4", "-6"].contains { try net.client.run(["ip", $0, "route", "show", "table", "all"]).contains("table 51820") })
        #expect(try Command.run(["wg", "show", ours.name, "fwmark"]).trimmed == "off")
        #expect(ours.process.output.contains("Table = off: no routes to the peers' AllowedIPs added"), "\(ours.process.output)")
        try net.client.run(["ping", "-c", "2", "-i", "0.2", "-W", "3", "10.97.0.1"])
        // Nothing else goes into the tunnel: the service sees the client's own address.
        _ = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        #expect(try net.client.run(["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == Topology.clientAddress4)
    }

    /// `Table = 1234`: every AllowedIPs prefix, the defaults included, goes into table 1234;
    /// the main table and the rules are untouched and no fwmark is set.
    @Test func tableNumberPutsEveryRouteInThatTable() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let rulesBefore = try Self.routing(net.client, "lo").rules
        let ours = try ourClient(net, subnet: 98, port: 51916, allowed: "0.0.0.0/0, ::/0, 192.0.2.0/24",
                                 interfaceLines: ["Table = 1234"], cleanup: cleanup)
        let v4 = try net.client.run(["ip", "-4", "route", "show", "table", "1234"])
        let v6 = try net.client.run(["ip", "-6", "route", "show", "table", "1234"])
        #expect(v4.contains("default dev \(ours.name)") && v4.contains("192.0.2.0/24 dev \(ours.name)"), "\(v4)")
        #expect(v6.contains("default dev \(ours.name)"), "\(v6)")
        let main = try net.client.run(["ip", "route", "show", "table", "main", "dev", ours.name])
        #expect(!main.contains("192.0.2.0/24") && !main.contains("default"), "\(main)")
        #expect(try Self.routing(net.client, ours.name).rules == rulesBefore)
        #expect(try Command.run(["wg", "show", ours.name, "fwmark"]).trimmed == "off")
        // The table routes into the tunnel for whoever looks it up: here, a rule of the test's.
        let services = try net.startServices()
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        try net.client.run(["ip", "rule", "add", "to", Topology.service4, "lookup", "1234", "priority", "100"])
        #expect(try net.client.run(["python3", probe, "tcp", Topology.service4, "8080"]).trimmed == "10.98.0.2")
        #expect(services.seen() == ["tcp 10.98.0.2"])
    }

    /// A listening peer (no Endpoint) with `Table = 1234` is refused: it would route nothing.
    @Test func aListeningPeerRefusesATableNumber() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let (key, _) = try WireGuardGo.keyPair()
        let (_, peer) = try WireGuardGo.keyPair()
        let path = NSTemporaryDirectory() + "vx-\(uniqueTag())-table.conf"
        _ = FileManager.default.createFile(atPath: path, contents: Data("""
            [Interface]
            PrivateKey = \(key)
            Table = 1234
            [Peer]
            PublicKey = \(peer)
            AllowedIPs = 10.99.0.2/32
            """.utf8), attributes: [.posixPermissions: 0o600])
        cleanup.add("remove \(path)") { try? FileManager.default.removeItem(atPath: path) }
        let result = try net.client.status([try Binaries.path("vpn-server"), "--config", path, "--interface", "vx\(net.tag)t"])
        #expect(result.status == 1 && result.stderr.contains("\(path):3: Table = 1234 is for a client's routes"), "\(result.stderr)")
        #expect(try net.client.status(["ip", "link", "show", "vx\(net.tag)t"]).status != 0)
    }

    /// `DNS =` and `SaveConfig = true` in a file that others may read: one warning line
    /// each (DNS's naming the servers and the line), wg-quick's "world accessible" warning,
    /// the resolver and the file byte for byte as they were, and no key in the output.
    /// The running engine kept CAP_NET_ADMIN and CAP_NET_BIND_SERVICE and nothing else.
    @Test func dnsAndSaveConfigAreReportedNotAppliedAndAReadableFileIsWarnedAbout() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let server = try WireGuardGoServer(net, subnet: 99, port: 51917, cleanup: cleanup)
        let directory = NSTemporaryDirectory() + "vx-\(uniqueTag())-dns"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        cleanup.add("remove \(directory)") { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/dns.conf"
        let text = server.clientConfig(["DNS = 10.99.0.1, corp.example", "SaveConfig = true"])
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o644])
        let resolver = try Data(contentsOf: URL(fileURLWithPath: "/etc/resolv.conf"))
        let name = "vx\(net.tag)d"
        let engine = try BackgroundProcess(net.client.enter + [try Binaries.path("vpn-server"), "--config", path, "--interface", name],
                                           cleanup: cleanup)
        cleanup.add("remove \(name).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(name).sock") }
        try eventually("vpn-server to bring \(name) up") {
            guard engine.isRunning else { throw TestEnvironmentError("vpn-server exited: \(engine.output)") }
            return engine.output.contains("client on UDP port")
        }
        try net.client.run(["ping", "-c", "1", "-W", "3", "10.99.0.1"])
        #expect(EnginePrivileges.of(pid: engine.pid) == EnginePrivileges.expected)
        engine.stop()
        #expect(engine.process.terminationStatus == 0, "\(engine.output)")
        let lines = engine.output.split(separator: "\n")
        let dns = lines.filter { $0.contains("DNS =") }
        #expect(dns == ["\(path):4: DNS = 10.99.0.1, corp.example is not applied: vpn-server leaves the resolver alone (wg-quick would hand these to resolvconf); configure it yourself"],
                "\(engine.output)")
        #expect(lines.filter { $0.contains("SaveConfig") } == ["\(path):5: SaveConfig = true is not applied: vpn-server never writes the file back"])
        #expect(lines.filter { $0.contains("world accessible") } == ["Warning: `\(path)' is world accessible"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: "/etc/resolv.conf")) == resolver)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        #expect(!engine.output.contains(server.clientKey.prefix(20)))
    }
}
