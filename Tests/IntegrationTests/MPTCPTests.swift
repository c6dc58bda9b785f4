import Foundation
import NetTestSupport
import Testing

/// MPTCP (a socket opened with IPPROTO_MPTCP). The socket the member makes is born with its
/// profile's mark, but it sends nothing itself: its subflows do, TCP sockets the kernel makes
/// for it (in the member's cgroup, so its egress guard sees them) that the birth mark never
/// reaches. A subflow has the mark only if the kernel copies it from the member's socket,
/// which it does when the application has set an option on that socket before connecting
/// (SO_KEEPALIVE, TCP_NODELAY...: the options the kernel then copies to every subflow, the
/// mark with them). So a member's MPTCP connection is either unmarked, and dropped at its
/// cgroup's egress (it fails: connect times out), or marked, and tunneled like any of its
/// TCP connections (to a server without MPTCP it falls back to TCP; to one with MPTCP it is
/// MPTCP through the tunnel). Either way nothing of it leaves in the clear, tunnel up or
/// down; an extra subflow on the physical link (an MPTCP endpoint the admin configured) is
/// dropped by the killswitch.
@Suite(.serialized) struct MPTCPTests {
    /// usage: HOST PORT TIMEOUT OPTION [drain]. Prints "mark 0x..." (SO_MARK of the new
    /// socket), then "connected <own address> <first line the server sent> mptcp=<0|1>"
    /// (TCP_IS_MPTCP: 0 once fallen back to TCP) or "error <errno name|timeout>"; with
    /// drain, then "received <bytes>" once the server closes.
    static let client = """
    import errno, socket, sys
    host, port, timeout, option = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)  # IPPROTO_MPTCP
    print("mark", hex(s.getsockopt(socket.SOL_SOCKET, 36)), flush=True)  # SO_MARK
    if option == "keepalive": s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if option == "nodelay": s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
        f = s.makefile("rb")
        seen = f.readline().decode().strip()
        print("connected", s.getsockname()[0], seen, "mptcp=%d" % s.getsockopt(socket.IPPROTO_TCP, 43), flush=True)
        if sys.argv[5:] == ["drain"]:
            print("received", len(f.read()), flush=True)
    except socket.timeout:
        print("error timeout", flush=True)
    except OSError as e:
        print("error", errno.errorcode.get(e.errno, str(e.errno)), flush=True)
    """

    /// An MPTCP service: usage ADDRESS PORT SECONDS. Answers each client with the address it
    /// saw and whether the connection is MPTCP ("<address> server-mptcp=<0|1>"), then sends
    /// 1000 bytes every 100 ms for SECONDS and closes.
    static let server = """
    import socket, sys, threading, time
    address, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port)); s.listen(16)
    print("listening", flush=True)
    def serve(c, peer):
        try:
            c.sendall(("%s server-mptcp=%d\\n" % (peer, c.getsockopt(socket.IPPROTO_TCP, 43))).encode())
            for _ in range(int(seconds * 10)):
                c.sendall(b"x" * 1000); time.sleep(0.1)
        except OSError:
            pass
        c.close()
    while True:
        c, peer = s.accept()
        threading.Thread(target=serve, args=(c, peer[0]), daemon=True).start()
    """

    struct Attempt {
        var mark = "", result = "", received: String?
        /// The kernel's subflow while the connection was being made (ss, one line), if asked.
        var subflow: String?
    }

    /// The scenario with MPTCP on both ends, the MPTCP service on 8443 (members) and 9443
    /// (the control), the reporting service on 9002 too (the control), and the capture.
    final class Setting {
        let s: Scenario
        let capture: Capture
        let control: Services
        let cleanup: Cleanup

        init(cleanup: Cleanup, streamSeconds: Double = 0) throws {
            self.cleanup = cleanup
            s = try Scenario(cleanup: cleanup, policy: Scenario.profiles(["work"]))
            for namespace in [s.net.client, s.net.server] {
                try namespace.run(["sysctl", "-qw", "net.mptcp.enabled=1"])
                #expect(try namespace.run(["sysctl", "-n", "net.mptcp.enabled"]).trimmed == "1")
            }
            control = try Services(in: s.net.server, addresses: [Topology.service4], port: 9002, cleanup: cleanup)
            let script = NSTemporaryDirectory() + "vx-\(uniqueTag())-mptcpserver.py"
            try MPTCPTests.server.write(toFile: script, atomically: true, encoding: .utf8)
            cleanup.add("remove \(script)") { try? FileManager.default.removeItem(atPath: script) }
            for port in ["8443", "9443"] {
                let service = try InteractiveProcess(s.net.server.enter + ["python3", script, Topology.service4, port, String(streamSeconds)], cleanup: cleanup)
                #expect(try service.readLine() == "listening")
            }
            capture = try Capture(on: s.net.clientUplink, in: s.net.client,
                                  filter: "tcp port 8080 or tcp port 8443 or tcp port 9002 or tcp port 9443", cleanup: cleanup)
        }

        /// One MPTCP connection, made by a member (through vpnexec) or a non-member.
        func mptcp(member: Bool, port: Int, option: String = "none", timeout: Double = 4,
                   watchSubflow: Bool = false, drain: Bool = false, while running: () throws -> Void = {}) throws -> Attempt {
            let prefix = member ? try s.daemon.vpnexec(profile: "work", []) : s.net.client.enter
            let process = try InteractiveProcess(prefix + ["python3", "-c", MPTCPTests.client, Topology.service4, String(port), String(timeout), option]
                                                 + (drain ? ["drain"] : []), cleanup: cleanup)
            var attempt = Attempt()
            attempt.mark = try process.readLine()
            if watchSubflow {
                // The subflow, in SYN-SENT all the while its SYNs are dropped.
                try eventually("the member's subflow to show") {
                    let line = try s.net.client.run(["ss", "-tnHe", "--cgroup", "state", "syn-sent", "dst", "\(Topology.service4):\(port)"]).trimmed
                    attempt.subflow = line
                    return !line.isEmpty
                }
            }
            attempt.result = try process.readLine()
            try running()
            if drain { attempt.received = try process.readLine() }
            return attempt
        }

        /// The profile's killswitch drops (nft's counter plus its cgroup guard's) and nft's alone.
        func drops() throws -> (all: Int, nft: Int) {
            let text = try s.net.client.run(["nft", "list", "counter", "inet", "vpnexec", "work_dropped"])
            let nft = text.firstMatch(of: /packets (\d+)/).map { Int($0.1)! } ?? -1
            return (Int(try s.daemon.status().profiles[0].droppedByKillswitch.packets), nft)
        }

        var memberCgroup: String { "cgroup:/\(s.daemon.cgroupParent)/vpn-work.slice" }
    }

    /// Tunnel up and down: a member's MPTCP socket without options fails closed (its
    /// subflow carries no mark, its SYNs are dropped by the cgroup guard, connect times
    /// out); with an option set before connect its subflow has the profile's mark and the
    /// connection is tunneled (plain TCP to the reporting service, MPTCP to the MPTCP
    /// service), or refused at once while the tunnel is down. Nothing of the member in the
    /// clear; the non-member's MPTCP connections are seen by the same capture.
    @Test func aMembersMPTCPLeavesThroughTheTunnelOrNotAtAll() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let x = try Setting(cleanup: cleanup)
        let s = x.s
        let tunnel = s.tunnel.clientAddress4
        #expect(try s.member() == tunnel, "a member's plain TCP is tunneled")

        // No option: the subflow is unmarked, in the member's cgroup, routed to the
        // physical link, and its SYNs die at the cgroup's egress.
        for port in [8080, 8443] {
            let before = try x.drops()
            let attempt = try x.mptcp(member: true, port: port, watchSubflow: true)
            let after = try x.drops()
            #expect(attempt.mark == "mark 0x1000000", "the member's MPTCP socket is born marked")
            let subflow = attempt.subflow ?? ""
            #expect(subflow.contains("\(Topology.clientAddress4):") && !subflow.contains("fwmark") && subflow.contains(x.memberCgroup),
                    "the subflow: the physical address, no mark, the member's cgroup: \(subflow)")
            #expect(attempt.result == "error timeout", "port \(port): \(attempt.result)")
            #expect(after.all > before.all, "its SYNs are dropped and counted (\(before.all) -> \(after.all))")
            #expect(after.nft == before.nft, "by the cgroup guard, not nft's killswitch")
        }
        #expect(s.services.seen() == ["tcp \(tunnel)"], "the reporting service saw only the plain TCP: \(s.services.seen())")

        // An option set first: the subflow gets the socket's mark, and the tunnel.
        for option in ["keepalive", "nodelay"] {
            let attempt = try x.mptcp(member: true, port: 8080, option: option)
            #expect(attempt.result == "connected \(tunnel) \(tunnel) mptcp=0", "\(option): tunneled, fallen back to TCP: \(attempt.result)")
        }
        let mptcp = try x.mptcp(member: true, port: 8443, option: "keepalive")
        #expect(mptcp.result == "connected \(tunnel) \(tunnel) server-mptcp=1 mptcp=1", "MPTCP through the tunnel: \(mptcp.result)")
        #expect(s.services.count("tcp \(tunnel)") == 3)

        // The controls: a non-member's MPTCP, fallen back and not.
        #expect(try x.mptcp(member: false, port: 9002).result == "connected \(Topology.clientAddress4) \(Topology.clientAddress4) mptcp=0")
        #expect(try x.mptcp(member: false, port: 9443).result == "connected \(Topology.clientAddress4) \(Topology.clientAddress4) server-mptcp=1 mptcp=1")

        // Tunnel down: unmarked, dropped by the guard; marked, refused by the profile's table.
        try s.tunnel.setClientLink(up: false)
        let before = try x.drops()
        let closed = try x.mptcp(member: true, port: 8080)
        #expect(closed.result == "error timeout")
        #expect(try x.drops().all > before.all)
        for port in [8080, 8443] {
            #expect(try x.mptcp(member: true, port: port, option: "keepalive").result == "error EHOSTUNREACH", "tunnel down, port \(port)")
        }
        #expect(!s.services.seen().contains("tcp \(Topology.clientAddress4)"))

        let leaked = try x.capture.packets("tcp port 8080 or tcp port 8443")
        #expect(leaked.isEmpty, "member packets in the clear: \(leaked.prefix(5))")
        let controlSYNs = try x.capture.packets("tcp dst port 9002 and tcp[tcpflags] == tcp-syn")
        #expect(controlSYNs.count >= 1 && controlSYNs.allSatisfy { $0.contains("mptcp") && $0.contains("capable") },
                "the capture sees the non-member's MP_CAPABLE SYN: \(controlSYNs)")
        #expect(try x.capture.count("tcp port 9443") > 4, "and its MPTCP connection")
        #expect(x.control.seen() == ["tcp \(Topology.clientAddress4)"])
    }

    /// An MPTCP endpoint on the physical link (`ip mptcp endpoint ... subflow`, the admin's):
    /// a member's tunneled MPTCP connection opens an extra subflow from the physical address;
    /// it has the profile's mark, and the killswitch drops it. The connection carries on
    /// through the tunnel; nothing in the clear.
    @Test func anExtraSubflowOnThePhysicalLinkIsDropped() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let x = try Setting(cleanup: cleanup, streamSeconds: 3)
        let s = x.s
        for namespace in [s.net.client, s.net.server] {
            try namespace.run(["ip", "mptcp", "limits", "set", "subflow", "4", "add_addr_accepted", "4"])
        }
        try s.net.client.run(["ip", "mptcp", "endpoint", "add", Topology.clientAddress4, "dev", s.net.clientUplink, "subflow"])
        let before = try x.drops()
        var joins = 0
        let attempt = try x.mptcp(member: true, port: 8443, option: "keepalive", drain: true) {
            try eventually("the extra subflow's SYN to be dropped by the killswitch") {
                joins = try s.net.client.run(["nstat", "-az", "MPTcpExtMPJoinSynTx"]).firstMatch(of: /MPTcpExtMPJoinSynTx\s+(\d+)/).map { Int($0.1)! } ?? 0
                return try x.drops().nft > before.nft
            }
        }
        #expect(attempt.result == "connected \(s.tunnel.clientAddress4) \(s.tunnel.clientAddress4) server-mptcp=1 mptcp=1")
        #expect(attempt.received == "received 30000", "the connection went on through the tunnel")
        #expect(joins >= 1, "the kernel tried the join (MPJoinSynTx \(joins))")
        #expect(try x.mptcp(member: false, port: 9443, drain: true).received == "received 30000")
        let leaked = try x.capture.packets("tcp port 8443")
        #expect(leaked.isEmpty, "member packets in the clear: \(leaked.prefix(5))")
        #expect(try x.capture.count("tcp port 9443") > 20, "the capture sees the non-member's MPTCP")
    }
}
