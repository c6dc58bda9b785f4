import Control
import Foundation
import NetTestSupport
import Testing

/// What every command answers without vpnd: --version, and vpnexec's own exit statuses.
@Suite struct CommandLineTests {
    /// All four say the same version, from the build: `NAME VERSION`.
    @Test func everyCommandAnswersVersion() throws {
        var versions: Set<String> = []
        for name in ["vpnexec", "vpnctl", "vpnd", "vpn-server"] {
            let result = try Command.status([try Binaries.path(name), "--version"])
            #expect(result.status == 0 && result.stdout.hasPrefix(name + " ") && result.stdout.hasSuffix("\n"), "\(name): \(result.stdout)\(result.stderr)")
            versions.insert(String(result.stdout.dropFirst(name.count + 1)))
        }
        #expect(versions.count == 1 && versions.first.map { !$0.trimmed.isEmpty } == true, "\(versions)")
    }

    /// `--socket` goes to every vpnctl subcommand, before or after it; check, which reads
    /// files only, accepts it too (a script passes it everywhere).
    @Test func vpnctlCheckAcceptsTheSocketOption() throws {
        let file = NSTemporaryDirectory() + "vx-\(uniqueTag()).toml"
        try "[profile.work]\ntunnel.interface = \"wg0\"\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let socket = "/tmp/vx-none-\(uniqueTag()).sock"
        for arguments in [["--socket", socket, "check", file], ["check", "--socket", socket, file], ["--socket=" + socket, "check", file]] {
            let result = try Command.status([try Binaries.path("vpnctl")] + arguments)
            // A warning follows: this host holds no DNS servers for wg0 (TunnelResolversTests).
            #expect(result.status == 0 && result.stdout.hasPrefix("ok: 1 profile work\n"), "\(arguments): \(result.stdout)\(result.stderr)")
        }
    }

    /// `vpnctl check DIR` reads the directory as vpnd does (its *.toml files) and says every
    /// error of its built-in tunnels' files, a misspelt key with the key meant; a file vpnd
    /// would never read as policy is refused (issue 43, item 8).
    @Test func vpnctlChecksADirectoryAsVpndReadsIt() throws {
        let directory = NSTemporaryDirectory() + "vx-check-\(uniqueTag())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wg = directory + "/work.conf"
        try "[profile.work]\ntunnel.wireguard = \"\(wg)\"\n".write(toFile: directory + "/10-work.toml", atomically: true, encoding: .utf8)
        try "[profile.notes]\n".write(toFile: directory + "/notes.conf", atomically: true, encoding: .utf8)
        func writeTunnel(_ address: String, _ mtu: String) {
            let text = "[Interface]\nPrivateKey = \(String(repeating: "A", count: 43))=\n\(address) = 10.8.0.2/24\n\(mtu) = 1400\nDNS = 10.8.0.1\n[Peer]\n"
                + "PublicKey = \(String(repeating: "B", count: 42))A=\nAllowedIPs = 0.0.0.0/0\n"
            #expect(FileManager.default.createFile(atPath: wg, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        }
        writeTunnel("Adress", "MTUU")
        let vpnctl = try Binaries.path("vpnctl")
        let checked = try Command.status([vpnctl, "check", directory])
        #expect(checked.status == 1 && checked.stderr == """
            \(wg):3:1: error: unknown key "Adress" in [Interface]; did you mean "Address"? (the wg-quick file of profile work)
            \(wg):4:1: error: unknown key "MTUU" in [Interface]; did you mean "MTU"? (the wg-quick file of profile work)

            """, "\(checked.status) \(checked.stderr)")
        // notes.conf is not read, as vpnd would not read it.
        writeTunnel("Address", "MTU")
        let fixed = try Command.status([vpnctl, "check", directory])
        #expect(fixed.status == 0 && fixed.stdout == "ok: 1 profile work\n", "\(fixed.stdout)\(fixed.stderr)")
        let refused = try Command.status([vpnctl, "check", directory + "/notes.conf"])
        #expect(refused.status == 1 && refused.stderr == "vpnctl: \(directory)/notes.conf: vpnd would never read this file as policy: "
                + "it reads the *.toml files of its policy directory (/etc/vpnexec/policy.d), not hidden ones\n", "\(refused.stderr)")
        let both = try Command.status([vpnctl, "check", directory, directory + "/10-work.toml"])
        #expect(both.status == 64 && both.stderr == "vpnctl: check takes a policy directory or policy files, not both: \(directory) is a directory\n", "\(both.stderr)")
    }

    /// A usage error is vpnexec's own failure: 125 as env's and timeout's, never a status the
    /// command could have returned; the command does not run. It is said in a line, with the
    /// synopsis after it, not the whole help (issue 43: 23 lines on stderr).
    @Test func vpnexecUsageErrorsExit125() throws {
        let marker = NSTemporaryDirectory() + "vx-\(uniqueTag())-ran"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        for arguments in [[], ["-p"], ["--bogus", "touch", marker], ["-p", "work"], ["--bypass", "-p", "work", "touch", marker],
                          ["-p", "--", "touch", marker], ["-p", "--bypass", "touch", marker]] {
            let result = try Command.status([try Binaries.path("vpnexec")] + arguments)
            let lines = result.stderr.split(separator: "\n")
            #expect(result.status == 125 && lines.count == 4 && lines[0].hasPrefix("vpnexec: ") && lines[1].hasPrefix("Usage: vpnexec ")
                    && lines[3].contains("vpnexec --help"), "\(arguments): \(result.status) \(result.stderr)")
        }
        #expect(try Command.status([try Binaries.path("vpnexec"), "-p", "--", "true"]).stderr.hasPrefix("vpnexec: -p needs a profile name\n"))
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(try Command.status([try Binaries.path("vpnexec"), "--help"]).stdout.contains("125 if vpnexec itself fails"))
    }

    /// getopt's attached value (`-pwork`) is the profile; the command starts after the
    /// options or after `--`, and its own options are its own.
    @Test func vpnexecTakesAnAttachedProfileName() throws {
        let asked = Requests()
        let vpnd = try FakeControlServer { asked.add($0); return ControlResponse(ok: true) }
        defer { vpnd.stop() }
        let vpnexec = try Binaries.path("vpnexec")
        for (arguments, expected) in [(["-pwork", "--", "echo", "-n", "one"], "one"), (["-pwork", "echo", "-p", "two"], "-p two\n"),
                                      (["--socket", vpnd.path, "-pwork", "--", "--version"], nil)] {
            let result = try Command.status([vpnexec] + (arguments.first == "--socket" ? [] : ["--socket", vpnd.path]) + arguments)
            if let expected {
                #expect(result.status == 0 && result.stdout == expected, "\(arguments): \(result.status) \(result.stdout)\(result.stderr)")
            } else {
                // "--version" after "--" is the command's name, not vpnexec's option.
                #expect(result.status == 127 && result.stderr == "vpnexec: --version: No such file or directory\n", "\(result.status) \(result.stderr)")
            }
        }
        #expect(asked.all == [.exec(profile: "work"), .exec(profile: "work"), .exec(profile: "work")])
    }

    /// vpnctl takes -pNAME as getopt does, as vpnexec does (issue 43, item 9): the argument
    /// parser alone refused it ("Unknown option '-pwork'"). An option's value and what
    /// follows `--` are left as they are.
    @Test func vpnctlTakesAnAttachedProfileName() throws {
        let asked = Requests()
        let vpnd = try FakeControlServer { asked.add($0); return ControlResponse(ok: true, message: "done") }
        defer { vpnd.stop() }
        let vpnctl = try Binaries.path("vpnctl")
        for arguments in [["members", "-pwork", "--json"], ["move", "-pwork", "42"], ["--socket", vpnd.path, "up", "--", "-pwork"]] {
            let result = try Command.status([vpnctl] + (arguments.first == "--socket" ? arguments : arguments + ["--socket", vpnd.path]))
            #expect(result.status == 0, "\(arguments): \(result.status) \(result.stdout)\(result.stderr)")
        }
        #expect(asked.all == [.members(profile: "work"), .move(profile: "work", pid: 42), .tunnelUp(profile: "-pwork")])
    }

    /// A bare `vpnctl down` once lifted every killswitch and stopped vpnd, one word away from
    /// `vpnctl down work` (issue 43). Now nothing reaches vpnd without the flag that names
    /// the loss, and the refusal says what to type for either meaning.
    @Test func vpnctlTeardownTakesItsFlagAndDownItsProfile() throws {
        let asked = Requests()
        let vpnd = try FakeControlServer { asked.add($0); return ControlResponse(ok: true, message: "done") }
        defer { vpnd.stop() }
        let vpnctl = try Binaries.path("vpnctl")
        let bare = try Command.status([vpnctl, "--socket", vpnd.path, "down"])
        #expect(bare.status == 64 && bare.stderr == "vpnctl: down needs a profile: `vpnctl down NAME` holds that profile's built-in tunnel down; "
                + "`vpnctl teardown --remove-killswitch` removes every killswitch and stops vpnd\n", "\(bare.status) \(bare.stderr)")
        let unflagged = try Command.status([vpnctl, "teardown", "--socket", vpnd.path])
        #expect(unflagged.status == 64 && unflagged.stderr == "vpnctl: teardown removes every profile's killswitch, rules and routes and stops vpnd, "
                + "so members' traffic leaves in the clear; nothing done: give --remove-killswitch to do it (`vpnctl down NAME` holds one built-in tunnel down)\n",
                "\(unflagged.status) \(unflagged.stderr)")
        #expect(asked.all.isEmpty, "refused before asking vpnd: \(asked.all)")
        #expect(try Command.status([vpnctl, "--socket", vpnd.path, "down", "work"]).status == 0)
        #expect(try Command.status([vpnctl, "--socket", vpnd.path, "teardown", "--remove-killswitch"]).status == 0)
        #expect(asked.all == [.tunnelDown(profile: "work"), .down])
    }

    /// git's and cargo's courtesy: a mistyped command is answered with the nearest.
    @Test func vpnctlSuggestsTheCommandMeant() throws {
        let vpnctl = try Binaries.path("vpnctl")
        for arguments in [["stauts"], ["--socket", "/tmp/vx-none.sock", "stauts"], ["stauts", "--json"]] {
            let result = try Command.status([vpnctl] + arguments)
            #expect(result.status == 64 && result.stderr == "vpnctl: unknown command \"stauts\"; did you mean \"status\"?\n", "\(arguments): \(result.stderr)")
        }
        let far = try Command.status([vpnctl, "frobnicate"])
        #expect(far.status == 64 && far.stderr.hasPrefix("vpnctl: unknown command \"frobnicate\" (commands: status, profiles,")
                && far.stderr.split(separator: "\n").count == 1, "\(far.stderr)")
        #expect(try Command.status([vpnctl, "help", "status"]).stdout.contains("USAGE: vpnctl status"))
        #expect(try Command.status([vpnctl, "help", "stauts"]).stderr == "vpnctl: unknown command \"stauts\"; did you mean \"status\"?\n")
    }

    /// One prefix style: the argument parser's errors begin with the command's name, as the
    /// commands' own do (issue 43: "Error:", "vpnctl:" and "error: PATH:" side by side).
    @Test func usageErrorsBeginWithTheCommandsName() throws {
        for (name, arguments) in [("vpnctl", ["status", "--bogus"]), ("vpnctl", ["move", "12"]), ("vpnd", ["--bogus"])] {
            let result = try Command.status([try Binaries.path(name)] + arguments)
            #expect(result.status == 64 && result.stderr.hasPrefix("\(name): ") && !result.stderr.contains("Error:"), "\(name) \(arguments): \(result.stderr)")
        }
        let file = NSTemporaryDirectory() + "vx-\(uniqueTag())-missing.toml"
        let check = try Command.status([try Binaries.path("vpnctl"), "check", file])
        #expect(check.status == 1 && check.stderr.hasPrefix("vpnctl: ") && check.stderr.contains("No such file or directory")
                && check.stderr.split(separator: "\n").count == 1, "\(check.stderr)")
    }

    /// vpnd's "<N>" priorities are for journald only (issue 43: "<6>" on a terminal): a
    /// stderr that is not the stream JOURNAL_STREAM names gets lines that begin "vpnd: ", as
    /// vpnexec's and vpnctl's errors begin with their names. Refused as a
    /// user other than root, vpnd touches nothing.
    @Test func vpndLogsPlainLinesOffTheJournal() throws {
        let asNobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", try Binaries.path("vpnd")]
        let plain = try Command.status(asNobody, environment: ["PATH": "/usr/bin:/bin", "JOURNAL_STREAM": "1:2"])
        #expect(plain.status == 1 && plain.stderr == "vpnd: must run as root (it keeps only CAP_NET_ADMIN once started)\n", "\(plain.stderr)")
    }

    /// `vpnctl` alone shows the profiles, as `wg` and `nmcli` show state (it printed the
    /// help); --verbose adds the internals; without vpnd one line says how to start it.
    @Test func bareVpnctlShowsTheProfiles() throws {
        var profile = ProfileStatus(name: "work", mark: 0x0100_0000, table: 7301, killswitch: true, cgroup: "vpn.slice/vpn-work.slice",
                                    tunnel: TunnelStatus(interface: "wg0", state: "missing"))
        profile.members = 1
        var report = StatusReport(version: "test", daemonPID: 1, policyDirectory: "/etc/vpnexec/policy.d", cgroupRoot: "/sys/fs/cgroup", profiles: [profile])
        report.sandbox = SandboxStatus(state: SandboxStatus.off)
        let answer = ControlResponse(ok: true, status: report)
        let vpnd = try FakeControlServer { request in
            request == .status ? answer : ControlResponse.failure("not faked")
        }
        defer { vpnd.stop() }
        let vpnctl = try Binaries.path("vpnctl")
        let bare = try Command.status([vpnctl, "--socket", vpnd.path])
        #expect(bare.status == 0 && bare.stdout == """
            profile work: killswitch on
              tunnel    wg0: missing, rx 0 B, tx 0 B
              members   1 process
              sent      0 packets; through the tunnel 0 packets
              received  0 packets
              dropped   0 packets by the killswitch
              held      the tunnel is missing: members' connections fail ("No route to host") and their datagrams are refused; nothing leaves

            """, "\(bare.status) \(bare.stdout)\(bare.stderr)")
        let verbose = try Command.status([vpnctl, "-v", "--socket", vpnd.path])
        #expect(verbose.status == 0 && verbose.stdout.hasPrefix("vpnd pid 1, policy /etc/vpnexec/policy.d, cgroup2 at /sys/fs/cgroup\nsandbox: off\n"),
                "\(verbose.stdout)\(verbose.stderr)")
        #expect(try Command.status([vpnctl, "--help"]).stdout.contains("USAGE: vpnctl <subcommand>"))
        let none = try Command.status([vpnctl, "--socket", "/tmp/vx-none-\(uniqueTag()).sock"])
        #expect(none.status == 1 && none.stdout.isEmpty && none.stderr.split(separator: "\n").count == 1
                && none.stderr.hasPrefix("vpnctl: vpnd is not running") && none.stderr.contains("start it with `systemctl start vpnd`"), "\(none.stderr)")
    }

    /// Without vpnd, `vpnctl plan` says it can compile the policy itself.
    @Test func vpnctlPlanWithoutVpndNamesPolicyDir() throws {
        let result = try Command.status([try Binaries.path("vpnctl"), "plan", "--socket", "/tmp/vx-none-\(uniqueTag()).sock"])
        #expect(result.status == 1 && result.stderr.split(separator: "\n").count == 1 && result.stderr.hasPrefix("vpnctl: vpnd is not running")
                && result.stderr.contains("`vpnctl plan --policy-dir /etc/vpnexec/policy.d` compiles the policy here"), "\(result.stderr)")
    }

    /// A file that cannot be written is named with the errno's words, in one line (issue 43:
    /// a Foundation CocoaError(...) dump for metrics, the same with ENOTDIR for desktop).
    @Test func fileErrorsAreSaidInWords() throws {
        let vpnd = try FakeControlServer { request in
            switch request {
            case .status: return ControlResponse(ok: true, status: StatusReport(version: "test", daemonPID: 1, policyDirectory: "/etc/vpnexec/policy.d", cgroupRoot: "/sys/fs/cgroup", profiles: []))
            case .profiles: return ControlResponse(ok: true, profiles: [ProfileSummary(name: "work", interface: "wg0", state: "up", builtIn: false, killswitch: true)])
            default: return ControlResponse.failure("not faked")
            }
        }
        defer { vpnd.stop() }
        let vpnctl = try Binaries.path("vpnctl")
        let metrics = try Command.status([vpnctl, "metrics", "--socket", vpnd.path, "--output", "/nonexistent/x.prom"])
        #expect(metrics.status == 1 && metrics.stderr == "vpnctl: cannot write /nonexistent/x.prom: No such file or directory\n", "\(metrics.stderr)")

        let directory = NSTemporaryDirectory() + "vx-\(uniqueTag())-desktop"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/share/applications", withIntermediateDirectories: true)
        try "[Desktop Entry]\nType=Application\nName=Firefox\nExec=firefox %u\n".write(toFile: directory + "/share/applications/firefox.desktop", atomically: true, encoding: .utf8)
        try "".write(toFile: directory + "/home", atomically: true, encoding: .utf8)
        let written = directory + "/metrics.prom"
        #expect(try Command.status([vpnctl, "metrics", "--socket", vpnd.path, "--output", written]).status == 0)
        #expect((try? String(contentsOfFile: written, encoding: .utf8))?.contains("vpnexec_") == true)

        let environment = ProcessInfo.processInfo.environment.merging(["XDG_DATA_HOME": directory + "/home", "XDG_DATA_DIRS": directory + "/share"]) { $1 }
        let desktop = try Command.status([vpnctl, "desktop", "--socket", vpnd.path, "-p", "work", "firefox"], environment: environment)
        #expect(desktop.status == 1 && desktop.stderr == "vpnctl: cannot create directory \(directory)/home: Not a directory; nothing written\n", "\(desktop.stderr)")
        let removal = try Command.status([vpnctl, "desktop", "--socket", vpnd.path, "-p", "work", "--remove", "firefox"], environment: environment)
        #expect(removal.status == 1 && removal.stderr == "vpnctl: cannot read \(directory)/home/applications/vpnexec-work-firefox.desktop: Not a directory\n", "\(removal.stderr)")
    }
}

/// What a fake vpnd was asked, in order.
final class Requests: @unchecked Sendable {
    private let lock = NSLock()
    private var requests: [ControlRequest] = []
    func add(_ request: ControlRequest) { lock.withLock { requests.append(request) } }
    var all: [ControlRequest] { lock.withLock { requests } }
}
