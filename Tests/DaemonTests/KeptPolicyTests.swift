@testable import Daemon
import Foundation
import Policy
import Testing

/// The policy that applied is what the state directory keeps: each file whole, and none of
/// an earlier policy's that this one no longer has (other files there are left alone).
@Suite struct KeptPolicyTests {
    @Test func theAppliedFilesAreKeptAndNoOthers() throws {
        let directory = NSTemporaryDirectory() + "vx-kept-\(UInt32.random(in: 0..<UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let kept = KeptPolicy(directory: directory + "/policy.d")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(kept.keep([PolicySource(path: "/etc/vpnexec/policy.d/10-work.toml", text: "a = 1\n"),
                           PolicySource(path: "/etc/vpnexec/policy.d/20-home.toml", text: "b = 2\n")]) == nil)
        try "notes\n".write(toFile: directory + "/policy.d/README", atomically: true, encoding: .utf8)
        #expect(kept.keep([PolicySource(path: "/etc/vpnexec/policy.d/10-work.toml", text: "a = 3\n")]) == nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory + "/policy.d").sorted()
        #expect(names == ["10-work.toml", "README"], "\(names)")
        #expect(try String(contentsOfFile: directory + "/policy.d/10-work.toml", encoding: .utf8) == "a = 3\n")
        // A directory where a file must go: said in words, nothing else touched.
        try FileManager.default.createDirectory(atPath: directory + "/policy.d/30-x.toml", withIntermediateDirectories: true)
        let failure = kept.keep([PolicySource(path: "/p/30-x.toml", text: "c = 1\n")])
        #expect(failure?.hasPrefix("could not keep the applied policy in \(directory)/policy.d: ") == true, "\(failure ?? "nil")")
        #expect(try String(contentsOfFile: directory + "/policy.d/10-work.toml", encoding: .utf8) == "a = 3\n")
    }
}
