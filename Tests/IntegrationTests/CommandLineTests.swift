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
