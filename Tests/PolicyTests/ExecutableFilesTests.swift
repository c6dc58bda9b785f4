import Policy
import Testing

/// The file system as a table, for the pure check of listed executables.
struct FakeInspector: ExecutableInspector {
    var files: [String: ExecutableFile]
    func inspect(_ path: String) -> ExecutableFile { files[path] ?? ExecutableFile(kind: .missing("does not exist")) }
}

/// `vpnctl check` refuses a listed path that names no program, at the line that lists it;
/// a symbolic link is the file it leads to, and two names of one file share its fate.
@Suite struct ExecutableFilesTests {
    static let policyText = """
        [profile.work]
        tunnel.interface = "wg0"
        route.executables = [
          "/usr/bin/firefox-esr",
          "/opt/tools/run.sh",
          "/usr/bin/nope",
          "/usr/lib",
          "/etc/motd",
        ]
        bypass.executables = ["/dev/null"]
        """

    static func file(_ inode: UInt64, _ kind: ExecutableFile.Kind = .program(script: false), target: String? = nil) -> ExecutableFile {
        ExecutableFile(kind: kind, target: target, identity: ExecutableFile.Identity(device: 1, inode: inode))
    }

    static let machine = FakeInspector(files: [
        "/usr/bin/firefox-esr": file(10, target: "/usr/lib/firefox-esr/firefox-esr"),
        "/usr/lib/firefox-esr/firefox-esr": file(10),
        "/opt/tools/run.sh": file(11, .program(script: true)),
        "/usr/lib": file(12, .directory),
        "/etc/motd": file(13, .notExecutable("is not executable by anyone (mode 644)")),
        "/dev/null": file(14, .notRegular),
        "/usr/bin/steam": file(20),
        "/usr/games/steam": file(20),
    ])

    @Test func pathsThatNameNoProgramAreRefusedAtTheirLine() throws {
        let policy = try parse([("/p/10.toml", Self.policyText)])
        let found = ExecutableFiles.diagnose(policy, inspector: Self.machine).map(\.description)
        // In the profile's (sorted) list order, bypass after route.
        #expect(found == [
            "/p/10.toml:8:3: error: profile \"work\": route.executables /etc/motd is not executable by anyone (mode 644); the rule would match nothing",
            "/p/10.toml:6:3: error: profile \"work\": route.executables /usr/bin/nope does not exist; the rule would match nothing",
            "/p/10.toml:7:3: error: profile \"work\": route.executables /usr/lib is a directory, not a program; the rule would match nothing",
            "/p/10.toml:10:23: error: profile \"work\": bypass.executables /dev/null is not a regular file (a device, socket or pipe); the rule would match nothing",
        ], "\(found)")
    }

    @Test func linksAndScriptsAreAccepted() throws {
        let policy = try parse([("/p/10.toml", """
            [profile.work]
            tunnel.interface = "wg0"
            route.executables = ["/usr/bin/firefox-esr", "/usr/lib/firefox-esr/firefox-esr", "/opt/tools/run.sh"]
            """)])
        #expect(ExecutableFiles.diagnose(policy, inspector: Self.machine).isEmpty, "a link and its target routed alike, a script")
        #expect(ExecutableFile.shown("/usr/bin/firefox-esr", target: "/usr/lib/firefox-esr/firefox-esr") == "/usr/bin/firefox-esr -> /usr/lib/firefox-esr/firefox-esr")
    }

    /// Hard links (or a link and its target) with different fates: the rule would depend on
    /// the name a program was started by.
    @Test func twoNamesOfOneFileHaveOneFate() throws {
        let policy = try parse([("/p/10.toml", """
            [profile.work]
            tunnel.interface = "wg0"
            route.executables = ["/usr/bin/steam"]
            [profile.home]
            tunnel.interface = "wg1"
            bypass.executables = ["/usr/games/steam"]
            route.executables = ["/usr/bin/firefox-esr"]
            [profile.lab]
            tunnel.interface = "wg2"
            route.executables = ["/usr/lib/firefox-esr/firefox-esr"]
            """)])
        let found = ExecutableFiles.diagnose(policy, inspector: Self.machine).map(\.description)
        #expect(found.count == 2, "\(found)")
        #expect(found.contains("/p/10.toml:10:22: error: profile \"lab\": route.executables /usr/lib/firefox-esr/firefox-esr is the same file as route.executables /usr/bin/firefox-esr of profile \"home\" (/p/10.toml:7:22); a program has one fate whatever name starts it"), "\(found)")
        #expect(found.contains { $0.hasPrefix("/p/10.toml:6:23: error: profile \"home\": bypass.executables /usr/games/steam is the same file as route.executables /usr/bin/steam of profile \"work\"") }, "\(found)")
    }
}
