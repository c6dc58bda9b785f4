import Foundation
import NetTestSupport
import Testing

/// systemd/vpn-server@.service under a real systemd (booted in a container, in the test's
/// client namespace), with the hardening it ships with.
@Suite(.serialized) struct WireGuardDropInSystemdTests {
    /// `systemctl start vpn-server@NAME` returns once the engine said READY=1; it runs with
    /// only CAP_NET_ADMIN and CAP_NET_BIND_SERVICE and no_new_privs inside the unit's
    /// sandbox, passes traffic to a wireguard-go server, serves `wg show` on
    /// /run/wireguard, and its warnings reach the journal as warnings. `systemctl stop`
    /// removes interface and socket; a deleted interface ends the unit as a success, not
    /// restarted.
    @Test func theUnitRunsTheEngineHardened() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let server = try WireGuardGoServer(net, subnet: 87, port: 51920, cleanup: cleanup)
        let name = "vx\(net.tag)n"
        let configuration = NSTemporaryDirectory() + "vx-\(uniqueTag())-units"
        try FileManager.default.createDirectory(atPath: configuration, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        cleanup.add("remove \(configuration)") { try? FileManager.default.removeItem(atPath: configuration) }
        _ = FileManager.default.createFile(atPath: configuration + "/\(name).conf",
                                           contents: Data(server.clientConfig(["DNS = 10.87.0.53"]).utf8), attributes: [.posixPermissions: 0o600])
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../systemd/vpn-server@.service").standardized.path
        let container = try BootedSystemd(root: try SystemdRoot.path(), namespace: net.client, binds: [
            .init("/opt/swift"),
            .init(try Binaries.path("vpn-server"), at: "/usr/local/bin/vpn-server"),
            .init(unit, at: "/etc/systemd/system/vpn-server@.service"),
            .init(configuration, at: "/etc/vpnexec/wireguard"),
        ], cleanup: cleanup)
        let service = "vpn-server@\(name).service"

        let started = try container.run(["systemctl", "start", service])
        let journal = try container.run(["journalctl", "-u", service, "--no-pager"]).stdout
        #expect(started.status == 0, "\(started.stderr)\(journal)")
        let running = try container.properties(service, ["ActiveState", "SubState", "Type", "MainPID"])
        #expect(running["ActiveState"] == "active" && running["SubState"] == "running" && running["Type"] == "notify", "\(running)")
        let status = try container.run(["cat", "/proc/\(running["MainPID"] ?? "0")/status"]).stdout
        for (field, value) in EnginePrivileges.expected {
            #expect(status.contains("\(field):\t\(value)"), "\(field) in \(status)")
        }
        let ping = try net.client.status(["ping", "-c", "3", "-i", "0.2", "-W", "3", "10.87.0.1"])
        #expect(ping.status == 0, "\(ping.stdout)")
        #expect(try container.run(["wg", "show", name, "peers"]).stdout.trimmed == server.publicKey)
        let warnings = try container.run(["journalctl", "-u", service, "-p", "warning", "-o", "cat", "--no-pager"]).stdout
        #expect(warnings.contains("DNS = 10.87.0.53 is not applied"), "\(warnings)")

        try container.run(["systemctl", "stop", service])
        #expect(try container.properties(service, ["ActiveState", "Result"]) == ["ActiveState": "inactive", "Result": "success"])
        #expect(try net.client.status(["ip", "link", "show", name]).status != 0)
        #expect(try container.run(["test", "-e", "/run/wireguard/\(name).sock"]).status != 0)

        // Deleted under the running unit: a clean end, not a failure to restart from.
        #expect(try container.run(["systemctl", "start", service]).status == 0)
        try net.client.run(["ip", "link", "delete", name])
        try eventually("the unit to end with its interface") {
            try container.properties(service, ["ActiveState"])["ActiveState"] == "inactive"
        }
        #expect(try container.properties(service, ["Result", "NRestarts"]) == ["Result": "success", "NRestarts": "0"])
    }
}
