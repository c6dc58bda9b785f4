import Foundation
import NetTestSupport
import Policy
import Testing
import TrustedFiles

/// `vpnctl check` reads what vpnd would (issue 43, item 8: it refused a directory with
/// "DIR: is not a regular file", had no default, and took a file vpnd never reads).
@Suite(.serialized) struct PolicyCheckInputTests {
    typealias Scratch = TrustedFileTests.Scratch

    @Test func withoutAPathTheDirectoryVpndReads() throws {
        #expect(try PolicyCheckInput.from([]) == .directory("/etc/vpnexec/policy.d"))
        #expect(PolicyDirectory.defaultPath == "/etc/vpnexec/policy.d")
    }

    @Test func oneDirectoryOrFiles() throws {
        let kind: (String) -> PolicyCheckInput.PathKind = { $0.hasSuffix(".d") ? .directory : .other }
        #expect(try PolicyCheckInput.from(["/p/policy.d"], kind: kind) == .directory("/p/policy.d"))
        #expect(try PolicyCheckInput.from(["/p/a.toml", "/p/b.toml"], kind: kind) == .files(["/p/a.toml", "/p/b.toml"]))
        #expect(refusal { _ = try PolicyCheckInput.from(["/p/policy.d", "/p/a.toml"], kind: kind) }
                == "check takes a policy directory or policy files, not both: /p/policy.d is a directory")
        #expect(refusal { _ = try PolicyCheckInput.from(["/p/a.d", "/p/b.d"], kind: kind) }
                == "check takes one policy directory (vpnd reads one): /p/a.d, /p/b.d are directories")
    }

    /// A directory is read as vpnd reads it: its *.toml files, not hidden ones, in name order.
    @Test func aDirectoryIsReadAsVpndReadsIt() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scratch = try Scratch(cleanup: cleanup)
        try scratch.file("policy.d/20-b.toml", "# b\n")
        try scratch.file("policy.d/10-a.toml", "# a\n")
        try scratch.file("policy.d/notes.conf", "not policy\n")
        try scratch.file("policy.d/.30-c.toml", "an editor's\n")
        let directory = scratch.path + "/policy.d"
        let input = try PolicyCheckInput.from([directory])
        #expect(input == .directory(directory))
        #expect(try input.read().map(\.path) == [directory + "/10-a.toml", directory + "/20-b.toml"])
        // Files named one by one come in the same order.
        #expect(try PolicyCheckInput.files([directory + "/20-b.toml", directory + "/10-a.toml"]).read().map(\.path)
                == [directory + "/10-a.toml", directory + "/20-b.toml"])
    }

    /// A file vpnd would never read as policy is refused, each one, in a line that says
    /// what vpnd reads.
    @Test func aFileVpndWouldNeverReadIsRefused() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scratch = try Scratch(cleanup: cleanup)
        let conf = try scratch.file("x.conf", "[profile.a]\ntunnel.interface = \"wg0\"\n")
        let hidden = try scratch.file(".x.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n")
        let good = try scratch.file("x.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n")
        #expect(refusal { _ = try PolicyCheckInput.from([conf, hidden, good]).read() } == """
            error: \(conf): vpnd would never read this file as policy: it reads the *.toml files of its policy directory (/etc/vpnexec/policy.d), not hidden ones
            error: \(hidden): vpnd would never read this file as policy: it reads the *.toml files of its policy directory (/etc/vpnexec/policy.d), not hidden ones
            """)
        #expect(try PolicyCheckInput.from([good]).read().map(\.path) == [good])
    }

    /// What cannot be read names what was asked for, and the directory on its way when that
    /// is where it failed (issue 43: the message named the directory alone).
    @Test func aMissingPathIsNamedWithTheDirectoryThatIsMissing() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scratch = try Scratch(cleanup: cleanup)
        #expect(refusal { _ = try PolicyDirectory.read(scratch.path + "/gone/policy.d") }
                == "error: cannot use policy directory \(scratch.path)/gone/policy.d: \(scratch.path)/gone: No such file or directory")
        #expect(refusal { _ = try PolicyDirectory.readFiles([scratch.path + "/gone/a.toml"]) }
                == "error: cannot read \(scratch.path)/gone/a.toml: \(scratch.path)/gone: No such file or directory")
        #expect(refusal { _ = try TrustedFile.read(scratch.path + "/gone.conf") } == "\(scratch.path)/gone.conf: No such file or directory")
    }

    func refusal(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "(accepted)"
        } catch {
            return "\(error)"
        }
    }
}
