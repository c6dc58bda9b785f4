import Foundation
import NetTestSupport
import Testing

/// Proof 4: a malformed policy is reported with file:line and changes nothing: vpnd
/// refuses to start, and a running vpnd keeps its nft table, rules and routes byte for
/// byte on reload (vpnctl reload and SIGHUP).
@Suite(.serialized) struct PolicyErrorTests {
    static func cases(tunnel: String) -> [(name: String, files: [String: String], expected: String)] {
        let good = "[profile.work]\ntunnel.interface = \"\(tunnel)\"\n"
        return [
            ("syntax", ["10-test.toml": "[profile.work]\ntunnel.interface = \"\(tunnel)\n"], "10-test.toml:2:"),
            ("unknown key", ["10-test.toml": good + "kilswitch = false\n"], "10-test.toml:3:1: error: unknown key \"kilswitch\""),
            ("bad type", ["10-test.toml": good + "killswitch = \"no\"\n"], "10-test.toml:3:14: error: [profile.work] killswitch must be true or false"),
            ("unknown group", ["10-test.toml": good + "groups = [\"vx-no-such-group\"]\n"], "10-test.toml:3:11: error: unknown group \"vx-no-such-group\""),
            ("duplicate profile", ["10-test.toml": good, "20-more.toml": "\n" + good], "20-more.toml:2:1: error: profile \"work\" is defined twice"),
            ("one mark, two profiles", ["10-test.toml": good + "mark = 0x01000000\n[profile.home]\ntunnel.interface = \"wg9\"\nmark = 0x01000000\n"],
             "10-test.toml:6:8: error: profile \"home\" uses mark 0x1000000, already used by profile \"work\""),
        ]
    }

    @Test func malformedPolicyIsRefusedWithFileAndLineAndChangesNothing() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let tunnel = try net.addWireGuardTunnel(1)
        let good = "[profile.work]\ntunnel.interface = \"\(tunnel.clientInterface)\"\n"
        let daemon = try DaemonHarness(topology: net, policy: good, cleanup: cleanup)

        for (name, files, expected) in Self.cases(tunnel: tunnel.clientInterface) {
            try install(files, in: daemon)
            let refused = try Command.status(try daemon.arguments)
            #expect(refused.status == 1, "\(name): vpnd must refuse to start")
            #expect(refused.stderr.contains(expected), "\(name): \(refused.stderr)")
            let checked = try daemon.vpnctl(["check"] + files.keys.sorted().map { daemon.policyDirectory + "/" + $0 })
            #expect(checked.status == 1 && checked.stderr.contains(expected), "\(name): vpnctl check: \(checked.stderr)")
        }
        #expect(try net.client.run(["nft", "list", "ruleset"]).isEmpty, "a refused start touched nothing")

        try install(["10-test.toml": good], in: daemon)
        let vpnd = try daemon.start()
        let before = try daemon.kernelState()
        #expect(before.contains("table inet vpnexec"))
        for (name, files, expected) in Self.cases(tunnel: tunnel.clientInterface) {
            try install(files, in: daemon)
            let reload = try daemon.vpnctl(["reload"])
            #expect(reload.status == 1, "\(name): reload must fail")
            #expect(reload.stderr.contains(expected) && reload.stderr.contains("unchanged"), "\(name): \(reload.stderr)")
            let afterReload = try daemon.kernelState()
            #expect(afterReload == before, "\(name): kernel state changed: \(lineDifference(before, afterReload))")
            let logged = vpnd.output.components(separatedBy: expected).count
            kill(vpnd.pid, SIGHUP)
            try eventually("vpnd to log the refused SIGHUP reload") { vpnd.output.components(separatedBy: expected).count > logged }
            let afterSignal = try daemon.kernelState()
            #expect(afterSignal == before, "\(name): kernel state changed after SIGHUP: \(lineDifference(before, afterSignal))")
        }
        // A valid change does apply: the comparison above could see one.
        try install(["10-test.toml": good + "mark = 0x05000000\n"], in: daemon)
        let reload = try daemon.vpnctl(["reload"])
        #expect(reload.status == 0, "\(reload.stderr)")
        let after = try daemon.kernelState()
        #expect(after != before && after.contains("0x5000000"))
        #expect(vpnd.isRunning)
    }

    @Test func planIsValidNftAndChangesNothing() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try Topology(cleanup: cleanup)
        let tunnel = try net.addWireGuardTunnel(1)
        let daemon = try DaemonHarness(topology: net, policy: "[profile.work]\ntunnel.interface = \"\(tunnel.clientInterface)\"\n[profile.home]\ntunnel.interface = \"wg-later\"\nkillswitch = false\n", cleanup: cleanup)
        try daemon.start()
        let before = try daemon.kernelState()
        let plan = try daemon.vpnctl(["plan"])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("# ip -4 route add default dev \(tunnel.clientInterface) table 7301 metric 1 proto 118"))
        let scratch = try NetworkNamespace("vx\(net.tag)p", cleanup: cleanup)
        try NftCLI.apply(plan.stdout, in: scratch, checkOnly: true)
        #expect(try daemon.kernelState() == before)
        let offline = try daemon.vpnctl(["plan", "--policy-dir", daemon.policyDirectory, "--cgroup-parent", daemon.cgroupParent])
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(offline.stdout.contains("chain egress_home {"))
    }

    private func install(_ files: [String: String], in daemon: DaemonHarness) throws {
        for name in (try FileManager.default.contentsOfDirectory(atPath: daemon.policyDirectory)) {
            try FileManager.default.removeItem(atPath: daemon.policyDirectory + "/" + name)
        }
        for (name, text) in files { try daemon.writePolicy(text, file: name) }
    }
}

/// The lines only one side has, for a readable failure.
func lineDifference(_ a: String, _ b: String) -> String {
    let left = a.split(separator: "\n"), right = b.split(separator: "\n")
    return "only before: \(left.filter { !right.contains($0) }); only after: \(right.filter { !left.contains($0) })"
}
