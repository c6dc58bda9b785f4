import Foundation
import NetTestSupport
import Policy
import Testing
import TrustedFiles

/// Policy and key files are read only where nobody but root could have changed them, and
/// from the descriptor that was checked.
@Suite(.serialized) struct TrustedFileTests {
    /// A root-owned scratch directory under /tmp (sticky, so acceptable as a parent).
    final class Scratch {
        let path: String
        init(cleanup: Cleanup) throws {
            try requireRoot()
            path = "/tmp/vx-trust-\(uniqueTag())"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
            cleanup.add("remove \(path)") { [path] in try? FileManager.default.removeItem(atPath: path) }
        }

        @discardableResult
        func file(_ name: String, _ text: String = "x = 1\n", mode: Int = 0o644, owner: Int = 0) throws -> String {
            let file = path + "/" + name
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            #expect(FileManager.default.createFile(atPath: file, contents: Data(text.utf8)))
            #expect(chmod(file, mode_t(mode)) == 0 && chown(file, uid_t(owner), 0) == 0)
            return file
        }
    }

    func refusal(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "(accepted)"
        } catch {
            return "\(error)"
        }
    }

    @Test func readsARootFileThroughStickyTmp() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scratch = try Scratch(cleanup: cleanup)
        let file = try scratch.file("ok.toml", "a = 1\n")
        #expect(try TrustedFile.read(file) == "a = 1\n")
        let secret = try scratch.file("key.conf", "PrivateKey = x\n", mode: 0o600)
        #expect(try TrustedFile.read(secret, holdsSecret: true) == "PrivateKey = x\n")
        // Relative paths are taken from the working directory.
        let cwd = FileManager.default.currentDirectoryPath
        defer { FileManager.default.changeCurrentDirectoryPath(cwd) }
        FileManager.default.changeCurrentDirectoryPath(scratch.path)
        #expect(try TrustedFile.read("ok.toml") == "a = 1\n")
    }

    @Test func refusesWhatOthersCouldChange() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scratch = try Scratch(cleanup: cleanup)
        let other = try scratch.file("theirs.toml", owner: 65534)
        #expect(refusal { _ = try TrustedFile.read(other) }.contains("the file is owned by uid 65534, not root"))
        let writable = try scratch.file("writable.toml", mode: 0o664)
        #expect(refusal { _ = try TrustedFile.read(writable) }.contains("the file is writable by group or others (mode 0664)"))
        let key = try scratch.file("key.conf", mode: 0o644)
        #expect(refusal { _ = try TrustedFile.read(key, holdsSecret: true) }.contains("readable by group or others (mode 0644) and holds a private key"))
        #expect(refusal { _ = try TrustedFile.read(try scratch.file("key2.conf", mode: 0o640), holdsSecret: true) }.contains("mode 0640"))

        // A parent directory a user could write to: anything below it could be swapped.
        let open = try scratch.file("open/inner/p.toml")
        #expect(chmod(scratch.path + "/open", 0o777) == 0)
        #expect(refusal { _ = try TrustedFile.read(open) }.contains("\(scratch.path)/open: the directory is writable by group or others (mode 0777)"))
        let owned = try scratch.file("owned/p.toml")
        #expect(chown(scratch.path + "/owned", 65534, 0) == 0)
        #expect(refusal { _ = try TrustedFile.read(owned) }.contains("\(scratch.path)/owned: the directory is owned by uid 65534"))
    }

    @Test func refusesSymbolicLinksAnywhereOnThePath() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scratch = try Scratch(cleanup: cleanup)
        let real = try scratch.file("real/p.toml")
        #expect(symlink(real, scratch.path + "/link.toml") == 0)
        #expect(refusal { _ = try TrustedFile.read(scratch.path + "/link.toml") }.contains("link.toml: is a symbolic link"))
        #expect(symlink(scratch.path + "/real", scratch.path + "/dirlink") == 0)
        #expect(refusal { _ = try TrustedFile.read(scratch.path + "/dirlink/p.toml") }.contains("dirlink: is a symbolic link"))
        // In a policy directory too, and listed with every other problem at once.
        try scratch.file("policy.d/10-a.toml", "[profile.a]\ntunnel.interface = \"wg0\"\n")
        #expect(symlink(real, scratch.path + "/policy.d/20-b.toml") == 0)
        try scratch.file("policy.d/30-c.toml", mode: 0o666)
        let error = refusal { _ = try PolicyDirectory.read(scratch.path + "/policy.d") }
        #expect(error.contains("20-b.toml: is a symbolic link") && error.contains("30-c.toml: the file is writable"), "\(error)")
    }

    @Test func refusesDevicesAndHugeFiles() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let scratch = try Scratch(cleanup: cleanup)
        #expect(refusal { _ = try TrustedFile.read("/dev/zero") }.contains("is not a regular file"))
        let big = try scratch.file("big.toml", String(repeating: "#", count: 5000))
        #expect(refusal { _ = try TrustedFile.read(big, limit: 4096) }.contains("is larger than 4096 bytes"))
        #expect(refusal { _ = try TrustedFile.read(scratch.path + "/missing.toml") }.contains("No such file"))
    }
}
