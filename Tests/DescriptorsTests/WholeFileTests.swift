import Descriptors
import Glibc
import Testing

/// What the commands say when a file cannot be written or read: the path and the errno's
/// words, one line (issue 43: `vpnctl metrics --output /nonexistent/x.prom` printed a
/// Foundation CocoaError, `vpnctl desktop` the same with ENOTDIR).
@Suite struct WholeFileTests {
    static func scratch() throws -> String {
        var template = Array("/tmp/vx-wholefile-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(made != nil)
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func remove(_ directory: String) {
        _ = system("rm -rf '\(directory)'")
    }

    @Test func aMissingDirectoryIsSaidWithThePathAndTheErrnosWords() {
        #expect(throws: SystemError("/nonexistent/x.prom", code: ENOENT)) { try WholeFile.replace("/nonexistent/x.prom", with: Array("x\n".utf8)) }
        #expect(SystemError("/nonexistent/x.prom", code: ENOENT).description == "/nonexistent/x.prom: No such file or directory")
        #expect(throws: SystemError("/nonexistent/x", code: ENOENT)) { try WholeFile.read("/nonexistent/x") }
    }

    @Test func replacesWholeAndLeavesNothingBeside() throws {
        let directory = try Self.scratch()
        defer { Self.remove(directory) }
        let path = directory + "/vpnexec.prom"
        try WholeFile.replace(path, with: Array("old\n".utf8))
        try WholeFile.replace(path, with: Array("new\n".utf8))
        #expect(try WholeFile.read(path) == Array("new\n".utf8))
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o644 & ~Self.umaskNow())
        #expect(try Self.entries(directory) == ["vpnexec.prom"], "no temporary file left")
        #expect(throws: SystemError(directory, code: EISDIR)) { try WholeFile.read(directory) }
    }

    /// mkdir -p through a regular file: ENOTDIR, naming the file that is not a directory.
    @Test func createDirectoriesNamesTheDirectoryItCouldNotMake() throws {
        let directory = try Self.scratch()
        defer { Self.remove(directory) }
        try WholeFile.createDirectories(directory + "/share/applications")
        try WholeFile.createDirectories(directory + "/share/applications")
        var info = stat()
        #expect(stat(directory + "/share/applications", &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        try WholeFile.replace(directory + "/local", with: [])
        #expect(throws: SystemError(directory + "/local", code: ENOTDIR)) { try WholeFile.createDirectories(directory + "/local/share/applications") }
        #expect(throws: SystemError(directory + "/local/x", code: ENOTDIR)) { try WholeFile.replace(directory + "/local/x", with: []) }
    }

    static func umaskNow() -> mode_t {
        let mask = umask(0o022)
        umask(mask)
        return mask
    }

    static func entries(_ directory: String) throws -> [String] {
        let handle = try #require(opendir(directory))
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}
