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
            #expect(result.status == 0 && result.stdout == "ok: 1 profile(s) work\n", "\(arguments): \(result.stdout)\(result.stderr)")
        }
    }

    /// A usage error is vpnexec's own failure: 125 as env's and timeout's, never a status the
    /// command could have returned; the command does not run.
    @Test func vpnexecUsageErrorsExit125() throws {
        let marker = NSTemporaryDirectory() + "vx-\(uniqueTag())-ran"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        for arguments in [[], ["-p"], ["--bogus", "touch", marker], ["-p", "work"], ["--bypass", "-p", "work", "touch", marker]] {
            let result = try Command.status([try Binaries.path("vpnexec")] + arguments)
            #expect(result.status == 125 && result.stderr.hasPrefix("vpnexec: ") && result.stderr.contains("USAGE:"), "\(arguments): \(result.status) \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(try Command.status([try Binaries.path("vpnexec"), "--help"]).stdout.contains("125 if vpnexec itself fails"))
    }
}
