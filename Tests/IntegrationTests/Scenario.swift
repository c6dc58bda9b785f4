import Foundation
import NetTestSupport

/// The usual setting of an integration test: the topology, wireguard-go tunnels, the
/// reporting services, the probe program and vpnd with a policy naming the tunnels.
final class Scenario: @unchecked Sendable {
    let net: Topology
    let tunnels: [WireGuardTunnel]
    let services: Services
    let daemon: DaemonHarness
    let probe: String
    let cleanup: Cleanup

    /// `policy` gets the tunnels' client interface names; `start` runs vpnd right away.
    init(cleanup: Cleanup, tunnels count: Int = 1, start: Bool = true, policy: ([String]) -> String) throws {
        self.cleanup = cleanup
        let net = try Topology(cleanup: cleanup)
        self.net = net
        tunnels = try (0..<count).map { try net.addWireGuardTunnel($0 + 1) }
        services = try net.startServices()
        daemon = try DaemonHarness(topology: net, policy: policy(tunnels.map(\.clientInterface)), cleanup: cleanup)
        probe = try PythonScript.write(PythonScript.probe, cleanup: cleanup)
        if start { try daemon.start() }
    }

    /// One profile per tunnel: work, home, ... (killswitch on).
    static func profiles(_ names: [String]) -> ([String]) -> String {
        { interfaces in
            zip(names, interfaces).map { "[profile.\($0)]\ntunnel.interface = \"\($1)\"\n" }.joined(separator: "\n")
        }
    }

    var tunnel: WireGuardTunnel { tunnels[0] }

    /// The source address the service saw for one TCP connection made by `probe MODE`
    /// started through `prefix` (e.g. vpnexec) or as a plain process.
    func connect(_ mode: String = "tcp", to service: String = Topology.service4, through prefix: [String]? = nil) throws -> String {
        try Command.run((prefix ?? net.client.enter) + ["python3", probe, mode, service, "8080"]).trimmed
    }

    func member(_ profile: String = "work", mode: String = "tcp", to service: String = Topology.service4, user: String? = nil) throws -> String {
        try connect(mode, to: service, through: try daemon.vpnexec(profile: profile, user: user, []))
    }

    /// A member sending a datagram every 10 ms, once its traffic is seen through the tunnel.
    func sendingMember(_ profile: String = "work") throws -> BackgroundProcess {
        let sender = try BackgroundProcess(try daemon.vpnexec(profile: profile, ["python3", probe, "udp-loop", Topology.service4, "8080"]), cleanup: cleanup)
        try eventually("member datagrams through the tunnel") { services.count("udp \(tunnel.clientAddress4)") > 5 }
        return sender
    }

    /// Cleartext member datagrams (to port 8080) on the client's physical interface, with a
    /// non-member sending to port 9002 all along as the positive control.
    func captureCleartext(control: String = Topology.service4) throws -> LeakWatch {
        try LeakWatch(on: net.clientUplink, in: net.client, probe: probe, control: control, cleanup: cleanup)
    }
}

/// A capture of member packets that must never appear (UDP to port 8080, or to each of
/// `members` over `transport`, from the client's address), and the control that must: a
/// non-member's datagrams to port 9002.
final class LeakWatch {
    let capture: Capture
    let control: BackgroundProcess
    private let members: String

    init(on interface: String, in namespace: NetworkNamespace, probe: String, control target: String = Topology.service4,
         members ports: [Int] = [8080], over transport: String = "udp", cleanup: Cleanup) throws {
        members = ports.map { "\(transport) port \($0)" }.joined(separator: " or ")
        capture = try Capture(on: interface, in: namespace, filter: "\(members) or udp port 9002", cleanup: cleanup)
        control = try BackgroundProcess(namespace.enter + ["python3", probe, "udp-loop", target, "9002"], cleanup: cleanup)
    }

    /// The member packets that left in the clear, and how many of the control's were seen.
    func stop() throws -> (leaked: [String], control: Int) {
        control.stop()
        return (try capture.packets(members), try capture.count("udp port 9002"))
    }
}
