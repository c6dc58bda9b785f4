import Control
import Foundation
import NetTestSupport
import Testing

/// Multihop through an on-demand entry: both tunnels on demand, the exit behind the entry
/// server (ExitBehindServer). The exit's first member brings the exit up, whose transport,
/// routed into the entry's TUN, brings the entry up; the entry stays up while the exit runs,
/// even with the exit silent (its file has no keepalive, its member sends nothing), and goes
/// down only after the exit did. Down again, a packet forwarded from a VM stand-in (a
/// namespace of no profile's behind a veth the entry lists in `forward.interfaces`) is
/// demand as a member's own packet is: it brings the entry up and goes through it, from the
/// tunnel's address. The client's physical link carries nothing but UDP to and from the
/// entry server throughout.
@Suite(.serialized) struct MultihopOnDemandTests {
    @Test func anExitBringsItsOnDemandEntryUpAndKeepsItUp() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        let exit = try ExitBehindServer(net, cleanup: cleanup)
        let entryInterface = "vx\(net.tag)i", exitInterface = "vx\(net.tag)o"
        let daemon = try DaemonHarness(topology: net, policy: "", cleanup: cleanup)
        // The VM stand-in: its own namespace behind a veth, no process of it a member.
        let (vm, vmInterface) = try net.namespaceBehindVeth("v", network: "10.95.0")
        let vmService = try Services(in: net.server, addresses: [Topology.service4], port: 8082, cleanup: cleanup)
        // The entry's own keepalives never count as traffic: they cannot keep it up.
        let entryConf = try BuiltInTunnelPeer(net: net, daemon: daemon, cleanup: cleanup, network: "10.63.0", keepalive: 1, file: "entry", serverName: "n").conf
        let exitConf = ServerScene.write(daemon, "exit", exit.clientFile)
        try daemon.writePolicy("""
            [profile.entry]
            tunnel = { wireguard = "\(entryConf)", interface = "\(entryInterface)" }
            on_demand = true
            idle = "3s"
            forward.interfaces = ["\(vmInterface)"]
            [profile.exit]
            tunnel = { wireguard = "\(exitConf)", interface = "\(exitInterface)", via = "entry" }
            on_demand = true
            idle = "3s"
            """)
        for name in [entryInterface, exitInterface] {
            cleanup.add("remove \(name).sock") { try? FileManager.default.removeItem(atPath: "/var/run/wireguard/\(name).sock") }
        }
        let wire = try Capture(on: net.clientUplink, in: net.client, filter: "ip", cleanup: cleanup)
        try daemon.start()
        func demand(_ name: String) throws -> TunnelDemandStatus? { try daemon.status().profiles.first { $0.name == name }?.tunnel.demand }
        func member() throws -> CommandResult {
            try Command.status(try daemon.vpnexec(profile: "exit", ["python3", probe, "tcp", ExitBehindServer.target, "8080"]))
        }

        #expect(try demand("entry")?.state == "down-on-demand" && demand("exit")?.state == "down-on-demand")
        // The exit's first member: the exit comes up, its initiation enters the entry's TUN and
        // brings the entry up; the connection waits for both handshakes and goes through.
        let first = try member()
        #expect(first.status == 0 && first.stdout.trimmed == "10.64.0.2", "the target saw \(first.stdout) \(first.stderr)")
        let entryUp = try #require(try demand("entry"))
        #expect(entryUp.state == "up" || entryUp.state == "connecting", "\(entryUp)")
        #expect(entryUp.reason == "a packet was routed into the tunnel (to \(ExitBehindServer.exitPublic))"
                || entryUp.reason == "a tunnel through it (tunnel.via) runs", "\(entryUp)")

        // A silent member keeps the exit up, and the running exit keeps its entry up, well past
        // the entry's idle time (3 s): the exit sends nothing into the entry meanwhile.
        let silent = try BackgroundProcess(try daemon.vpnexec(profile: "exit", ["sleep", "60"]), cleanup: cleanup)
        try eventually("the exit to see its silent member") { try demand("exit")?.idleLeft == nil && demand("exit")?.state == "up" }
        let quiet = Date().addingTimeInterval(9)
        while Date() < quiet {
            let entry = try demand("entry")
            #expect(entry?.state == "up", "the entry went down under its running exit: \(String(describing: entry))")
            if entry?.state != "up" { break }
            Thread.sleep(forTimeInterval: 0.5)
        }

        // The member gone: the exit idles first, then its entry, never the other way round.
        silent.stop()
        var exitDownFirst = false, entryDownFirst = false
        try eventually("both tunnels down on demand", seconds: 20) {
            let exitState = try demand("exit")?.state, entryState = try demand("entry")?.state
            if exitState == "down-on-demand" && entryState == "up" { exitDownFirst = true }
            if entryState == "down-on-demand" && exitState != "down-on-demand" { entryDownFirst = true }
            return exitState == "down-on-demand" && entryState == "down-on-demand"
        }
        #expect(exitDownFirst && !entryDownFirst, "the entry stayed up while the exit ran, and went down after it")

        // The VM's datagram, forwarded into the entry's TUN while it is down: the entry comes
        // up for it, and the VM's datagrams reach the service through it.
        let vmSender = try BackgroundProcess(vm.enter + ["python3", probe, "udp-loop", Topology.service4, "8082"], cleanup: cleanup)
        try eventually("the VM's datagrams through the entry", seconds: 10) { vmService.count("udp 10.63.0.2") > 3 }
        vmSender.kill9()
        let byPacket = try demand("entry")
        #expect(byPacket?.reason == "a packet was routed into the tunnel (to \(Topology.service4))", "\(String(describing: byPacket))")
        #expect(Set(vmService.seen()) == ["udp 10.63.0.2"], "\(Set(vmService.seen()))")

        // And both come back for the next member.
        let again = try member()
        #expect(again.status == 0 && again.stdout.trimmed == "10.64.0.2", "\(again.stdout) \(again.stderr)")

        // Nothing but the entry's transport on the physical link, from start to end.
        _ = try wire.stop()
        #expect(try wire.count("udp and host \(Topology.serverUplink4) and port 51960") > 5, "the capture saw the entry's transport")
        let other = try wire.packets("not (udp and host \(Topology.serverUplink4) and port 51960)")
        #expect(other.isEmpty, "packets other than the entry's transport on the physical link: \(other.prefix(5))")
    }
}
