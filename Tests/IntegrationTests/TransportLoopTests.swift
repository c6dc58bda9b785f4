import Control
import Foundation
import NetTestSupport
import Testing

/// No tunnel is routed into itself: in system mode every process is a member, the tunnel's
/// own daemon too. A wireguard-go whose socket carries no fwmark (here: none at all, and a
/// new socket after vpnd applied) must still reach its server directly, and members through
/// it; a loop already under way stops when vpnd learns the port.
@Suite(.serialized) struct TransportLoopTests {
    static func systemMode(_ interfaces: [String]) -> String {
        "[profile.work]\ntunnel.interface = \"\(interfaces[0])\"\n[system]\nprofile = \"work\"\n"
    }

    /// What the kernel handed the tunnel's daemon to send (the TUN's tx): a loop is this
    /// counter running away.
    static func tunnelBytes(_ s: Scenario) throws -> Int {
        let json = try s.net.client.run(["ip", "-j", "-s", "link", "show", "dev", s.tunnel.clientInterface])
        let link = try #require((try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])?.first)
        let stats = try #require(link["stats64"] as? [String: [String: Any]])
        return try #require(stats["tx"]?["bytes"] as? Int)
    }

    static func transport(_ s: Scenario) throws -> TransportStatus? {
        try s.daemon.status().profiles.first?.tunnel.transport
    }

    static func listenPort(_ s: Scenario) throws -> UInt16 {
        try #require(UInt16(try s.net.client.run(["wg", "show", s.tunnel.clientInterface, "listen-port"]).trimmed))
    }

    /// A request to wireguard-go's configuration socket (the cross-platform UAPI), its answer.
    static func uapi(_ socket: String, _ request: String) throws -> String {
        let ask = "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode()); print(s.recv(100).decode())"
        return try Command.run(["python3", "-c", ask, socket, request])
    }

    static func hex(base64 key: String) throws -> String {
        try #require(Data(base64Encoded: key)).map { String(format: "%02x", $0) }.joined()
    }

    /// A port no socket of the client holds, for the tunnel to move to.
    static func freePort(_ s: Scenario, not taken: UInt16) throws -> UInt16 {
        let used = try s.net.client.run(["ss", "-uanH"])
        for port in UInt16(41000)...UInt16(41999) where port != taken && !used.contains(":\(port) ") { return port }
        throw TestEnvironmentError("no free UDP port")
    }

    /// Proof (issue 19, item 3): a tunnel without fwmark in system mode works, also after
    /// `wg set IFACE listen-port N` made a new socket once vpnd had applied: members reach
    /// the server through the tunnel (it sees the tunnel's address), the tunnel's own
    /// transport leaves on the physical link from the new port, and the tunnel carries
    /// kilobytes in 5 s, not the hundreds of megabytes of a loop.
    @Test func systemModeWithATunnelThatSetsNoFwmark() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Self.systemMode)
        let tunnel = s.tunnel.clientInterface
        #expect(try s.net.client.run(["wg", "show", tunnel, "fwmark"]).trimmed == "off", "the tunnel's socket carries no mark")
        try s.daemon.start()
        let first = try Self.listenPort(s)
        try eventually("vpnd to know the tunnel's port") { try Self.transport(s)?.udpPort == first }
        let known = try #require(try Self.transport(s))
        #expect(known.source == "wg-socket" && known.owner == 0 && known.endpoints == ["\(Topology.serverUplink4):51821"], "\(known)")
        #expect(try s.connect() == s.tunnel.clientAddress4, "a plain process (a member in system mode) through the tunnel")

        // A new socket after vpnd applied: it carries no mark either.
        let moved = try Self.freePort(s, not: first)
        let transport = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "udp src port \(moved)", cleanup: cleanup)
        try s.net.client.run(["wg", "set", tunnel, "listen-port", String(moved)])
        let sender = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "8080"], cleanup: cleanup)
        try eventually("a member to reach the server through the tunnel again", seconds: 20) {
            try s.connect() == s.tunnel.clientAddress4
        }
        #expect(try Self.transport(s)?.udpPort == moved, "vpnd followed the new socket")
        let before = try Self.tunnelBytes(s), arrivedBefore = s.services.count("udp \(s.tunnel.clientAddress4)")
        Thread.sleep(forTimeInterval: 5)
        let carried = try Self.tunnelBytes(s) - before
        #expect(carried < 3 << 20, "the tunnel carried \(carried) bytes in 5 s: its own transport looped into it")
        #expect(s.services.count("udp \(s.tunnel.clientAddress4)") - arrivedBefore > 100, "the member's datagrams arrived through the tunnel meanwhile")
        sender.stop()
        #expect(try transport.count("udp src port \(moved)") > 0, "the tunnel's transport left on the physical link from its new port")
        let rules = try s.net.client.run(["ip", "rule"])
        #expect(rules.contains("uidrange 0-0 ipproto udp sport \(moved) goto"), "the transport's port goes past system mode to the main table: \(rules)")
        let text = try s.daemon.vpnctl(["status", "--verbose"]).stdout
        #expect(text.contains("transport udp \(moved) (wg-socket, pid "), "\(text)")
    }

    /// The guard for unmarked packets compares the tunnel's index, the one vpnd's routes
    /// into it use. A tunnel made again under another index (here a TUN device of the same
    /// name after wireguard-go's was deleted) is compared by its new index at the next plan;
    /// `nft list` names an index whose interface is gone by its number.
    @Test func theGuardFollowsATunnelMadeAgain() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Self.systemMode)
        let tunnel = s.tunnel.clientInterface
        func index() throws -> String { String(try s.net.client.run(["ip", "-o", "link", "show", "dev", tunnel]).prefix { $0 != ":" }) }
        func guardRule() throws -> String { try s.net.client.run(["nft", "list", "chain", "inet", "vpnexec", "unmarked"]) }
        try s.daemon.start()
        let first = try index()
        try eventually("the guard by the tunnel's index") { try guardRule().contains("oif \"\(tunnel)\" meta l4proto udp jump loop_work") }
        let chain = try guardRule()
        #expect(!chain.contains("oifname"), "compared by index, not by name: \(chain)")

        try s.net.client.run(["ip", "link", "del", tunnel])
        try s.net.client.run(["ip", "tuntap", "add", "dev", tunnel, "mode", "tun"])
        try s.net.client.run(["ip", "link", "set", tunnel, "up"])
        let second = try index()
        #expect(second != first)
        do {
            try eventually("the guard by the new index") { try guardRule().contains("oif \"\(tunnel)\" meta l4proto udp jump loop_work") }
        } catch {
            Issue.record("the tunnel was \(first), is \(second): \((try? guardRule()) ?? "")")
            throw error
        }
    }

    /// A loop already under way: vpnd is killed (its rules stay), the tunnel moves to a new
    /// port and a server endpoint the rules do not name, and its transport loops into it.
    /// vpnd started again learns the port from the tunnel's socket: the loop stops at once
    /// (the port drains a second, then goes past system mode to the main table), and members
    /// reach the server through the tunnel again.
    @Test func aLoopUnderWayStopsWhenVpndLearnsThePort() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, policy: Self.systemMode)
        let tunnel = s.tunnel.clientInterface
        let first = try Self.listenPort(s)
        try eventually("vpnd to know the tunnel's port") { try Self.transport(s)?.udpPort == first }
        #expect(try s.connect() == s.tunnel.clientAddress4)
        // A first start: no rule of ours could have looped the port, and it is not held.
        let firstLog = try #require(s.daemon.process).output
        #expect(firstLog.contains("transport udp \(first)") && !firstLog.contains(": held 1 s before it goes direct"), "\(firstLog.suffix(2000))")

        try #require(s.daemon.process).kill9()
        let moved = try Self.freePort(s, not: first)
        let peer = try s.net.client.run(["wg", "show", tunnel, "peers"]).trimmed
        let before = try Self.tunnelBytes(s)
        try s.net.client.run(["wg", "set", tunnel, "listen-port", String(moved), "peer", peer, "endpoint", "[\(Topology.serverUplink6)]:51821"])
        let sender = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "8080"], cleanup: cleanup)
        // The positive control: without vpnd the new socket's packets loop.
        try eventually("the tunnel's transport to loop into it", seconds: 20) { try Self.tunnelBytes(s) - before > 20 << 20 }

        // What the loop holds when vpnd learns the port, let out, would arrive at the server
        // wrapped in one more layer: its own transport, through the tunnel, from the
        // tunnel's address (to which the server would roam). The drain drops it instead.
        let throughTunnel = try Capture(on: s.tunnel.serverInterface, in: s.net.server, filter: "", cleanup: cleanup)
        try s.daemon.start()
        try eventually("vpnd to know the new port") { try Self.transport(s)?.udpPort == moved }
        let stopped = try Self.tunnelBytes(s)
        Thread.sleep(forTimeInterval: 5)
        let carried = try Self.tunnelBytes(s) - stopped
        #expect(carried < 3 << 20, "the tunnel carried \(carried) bytes in 5 s after vpnd learned its port")
        try eventually("a member to reach the server through the tunnel again", seconds: 20) {
            try s.connect() == s.tunnel.clientAddress4
        }
        sender.stop()
        let ownTransport = try throughTunnel.count("udp port 51821")
        #expect(ownTransport == 0, "the tunnel's own transport reached the server through the tunnel \(ownTransport) times")
        #expect(try throughTunnel.count("tcp port 8080") > 0, "the capture saw the member's connection through the tunnel")
        // The draining map is looked up only while a port drains: the rule is gone again.
        try eventually("the draining rule to go once the port drained") {
            try !s.net.client.run(["nft", "list", "chain", "inet", "vpnexec", "unmarked"]).contains("transport_draining")
        }
        let log = try #require(s.daemon.process).output
        #expect(log.contains("transport udp \(moved): held 1 s before it goes direct"), "the port drained before it went direct: \(log.suffix(2000))")
        #expect(log.contains("loop: tunnel \(tunnel) (profile work)"), "the loop it stopped is in the log: \(log.suffix(2000))")
        #expect(try Self.transport(s)?.loopDropped.packets ?? 0 > 0, "and counted in status")
        // What the loop left in wireguard-go drained into the drop: no packet reached the
        // server from the tunnel's own address, which it would have roamed to.
        let endpoints = try s.net.server.run(["wg", "show", s.tunnel.serverInterface, "endpoints"])
        #expect(endpoints.contains("[\(Topology.clientAddress6)]:\(moved)"), "the server's endpoint for the client: \(endpoints)")
    }

    /// A tunnel vpnd cannot ask (wireguard-go whose `wg` socket is out of vpnd's sight, as
    /// OpenVPN's tun0 has none): vpnd finds the process holding the device and its sockets'
    /// ports, and what would enter the tunnel from them is dropped, counted in status and
    /// logged: the tunnel does not work (it needs a mark of its own), but it does not loop.
    /// Once its socket carries a mark, as the log advises, the tunnel works.
    @Test func aTunnelVpndCannotAskIsGuarded() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Self.systemMode)
        let tunnel = s.tunnel.clientInterface
        let port = try Self.listenPort(s)
        let socket = "/var/run/wireguard/\(tunnel).sock", hidden = "/var/run/vx-hidden-\(s.net.tag)"
        try FileManager.default.createDirectory(atPath: hidden, withIntermediateDirectories: true)
        cleanup.add("remove \(hidden)") { try? FileManager.default.removeItem(atPath: hidden) }
        let peer = try s.net.client.run(["wg", "show", tunnel, "peers"]).trimmed
        // A handshake before vpnd runs, always (see the reset below).
        _ = try s.net.client.status(["ping", "-c", "1", "-W", "3", "10.99.1.1"])
        try eventually("a handshake before vpnd runs") {
            try s.net.client.run(["wg", "show", tunnel, "latest-handshakes"]).split(separator: "\t").last?.trimmingCharacters(in: .whitespacesAndNewlines) != "0"
        }
        try FileManager.default.moveItem(atPath: socket, toPath: hidden + "/\(tunnel).sock")
        try s.daemon.start()
        let wireguardGo = try #require(try s.net.client.run(["ss", "-uanpH", "sport", "= :\(port)"]).firstMatch(of: /pid=(\d+)/).flatMap { Int32($0.1) })
        try eventually("vpnd to find the process holding \(tunnel)") { try Self.transport(s)?.pid == wireguardGo }
        let guarded = try #require(try Self.transport(s))
        #expect(guarded.source == "unknown" && guarded.udpPort == nil && guarded.guardedUDPPorts == [port], "\(guarded)")

        // wireguard-go pins the source address and interface of its peer's last packet
        // (sticky sockets): a tunnel that shook hands before vpnd applied (as here; the
        // kernel's own IPv6 packets on a new link may start one) sends straight out of the
        // physical link, past the routing rules, where system mode's killswitch drops an
        // unknown socket's packets. Setting the endpoint again forgets the pinned source, as a tunnel that
        // has not talked yet would have none: its transport then follows the rules, into
        // the tunnel, which is the loop to guard.
        let reset = "set=1\npublic_key=\(try Self.hex(base64: peer))\nendpoint=\(Topology.serverUplink4):51821\n\n"
        #expect(try Self.uapi(hidden + "/\(tunnel).sock", reset).contains("errno=0"))
        let before = try Self.tunnelBytes(s)
        let sender = try BackgroundProcess(s.net.client.enter + ["python3", s.probe, "udp-loop", Topology.service4, "8080"], cleanup: cleanup)
        do {
            try eventually("the guard to drop the tunnel's own transport") { try Self.transport(s)?.loopDropped.packets ?? 0 > 0 }
        } catch {
            let state = (try? s.net.client.run(["sh", "-c", "nft list ruleset; ip rule; ip route show table all | grep -v 'local\\|broadcast'; ss -uanp; cat /proc/self/cgroup"])) ?? ""
            Issue.record("sender: \(sender.output)\nvpnd: \((try? #require(s.daemon.process).output.suffix(3000)) ?? "")\n\(state)")
            throw error
        }
        Thread.sleep(forTimeInterval: 5)
        let carried = try Self.tunnelBytes(s) - before
        #expect(carried < 3 << 20, "the tunnel carried \(carried) bytes: its own transport looped into it")
        try eventually("the loop in the log") { try #require(s.daemon.process).output.contains("loop: tunnel \(tunnel) (profile work)") }
        let text = try s.daemon.vpnctl(["status", "--verbose"]).stdout
        #expect(text.contains("transport unknown (no wg socket at \(socket)"), "\(text)")
        #expect(text.contains("guarded udp \(port) of pid \(wireguardGo),"), "\(text)")
        #expect(text.contains("of its own transport dropped before entering it"), "\(text)")

        // What the log advises, done where vpnd cannot see it: the socket gets a mark of its
        // own (as OpenVPN's --mark would), and the tunnel works, still unknown to vpnd.
        #expect(try Self.uapi(hidden + "/\(tunnel).sock", "set=1\nfwmark=51820\n\n").contains("errno=0"))
        try eventually("a member to reach the server through the tunnel", seconds: 20) { try s.connect() == s.tunnel.clientAddress4 }
        #expect(try Self.transport(s)?.source == "unknown")
        sender.stop()
    }

    /// The same tunnel with vpnd unable to look into processes (CAP_SYS_PTRACE outside its
    /// bounding set, as under systemd/vpnd.service): its inspector cannot start, vpnd runs
    /// on and says so in status. (The tunnel's socket carries a mark here, so it does not loop.)
    @Test func withoutThePtraceCapabilityStatusSaysSo() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup, start: false, policy: Self.systemMode)
        let tunnel = s.tunnel.clientInterface
        try s.net.client.run(["wg", "set", tunnel, "fwmark", "51820"])
        let socket = "/var/run/wireguard/\(tunnel).sock", hidden = "/var/run/vx-hidden-\(s.net.tag)"
        try FileManager.default.createDirectory(atPath: hidden, withIntermediateDirectories: true)
        cleanup.add("remove \(hidden)") { try? FileManager.default.removeItem(atPath: hidden) }
        try FileManager.default.moveItem(atPath: socket, toPath: hidden + "/\(tunnel).sock")
        s.daemon.launcher = ["setpriv", "--bounding-set", "-sys_ptrace", "--"]
        let vpnd = try s.daemon.start()
        let transport = try #require(try Self.transport(s))
        #expect(transport.source == "unknown" && transport.guardedUDPPorts.isEmpty
                && transport.detail?.contains("vpnd cannot look into processes") == true, "\(transport)")
        #expect(try s.connect() == s.tunnel.clientAddress4, "the marked tunnel works")
        #expect(vpnd.isRunning, "vpnd runs on without its inspector: \(vpnd.output)")
    }
}

