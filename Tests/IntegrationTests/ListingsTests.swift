import Foundation
import NetTestSupport
import Testing

/// What a user asks vpnd about the profiles it may use: `vpnctl profiles` (and the names shell
/// completion offers), `vpnctl members`, `vpnctl move --out`, `vpnctl desktop`; and that
/// `vpnctl status --json` is the same bytes twice.
@Suite(.serialized) struct ListingsTests {
    @Test func profilesMembersMoveOutDesktopAndCompletion() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let user = try TestUser("vxl\(tag)", cleanup: cleanup)
        let net = try Topology(cleanup: cleanup)
        let daemon = try DaemonHarness(topology: net, policy: """
            [profile.work]
            tunnel.interface = "vx\(net.tag)w"
            users = ["\(user.name)"]
            [profile.home]
            tunnel.interface = "vx\(net.tag)h"
            """, cleanup: cleanup)
        try daemon.start()
        let bin = URL(fileURLWithPath: try Binaries.path("vpnctl")).deletingLastPathComponent().path
        /// vpnctl as `user` (root if nil) with this daemon's socket and more of the environment.
        func vpnctl(_ user: String?, _ arguments: [String], environment: [String] = []) throws -> CommandResult {
            try Command.status(daemon.asUser(user) + (user == nil ? ["/usr/bin/env"] : [])
                               + ["VPNEXEC_SOCKET=\(daemon.socketPath)", "PATH=\(bin):/usr/sbin:/usr/bin:/sbin:/bin"] + environment
                               + [try Binaries.path("vpnctl")] + arguments)
        }

        // profiles: root sees both, the user only what it may use.
        let all = try vpnctl(nil, ["profiles"])
        #expect(all.status == 0, "\(all.stderr)")
        let table = all.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(table == [["PROFILE", "TUNNEL", "STATE", "KILLSWITCH", "MEMBERS"], ["work", "vx\(net.tag)w", "missing", "on", "0"],
                          ["home", "vx\(net.tag)h", "missing", "on", "0"]], "\(all.stdout)")
        // Aligned: each row's third column starts where the header's STATE does.
        #expect(Set(all.stdout.split(separator: "\n").map { row in row.distance(from: row.startIndex, to: row.firstRange(of: row.split(separator: " ")[2])!.lowerBound) }).count == 1,
                "aligned columns: \(all.stdout)")
        let mine = try vpnctl(user.name, ["profiles"])
        #expect(mine.stdout.split(separator: "\n").map { $0.split(separator: " ").first.map(String.init) } == ["PROFILE", "work"], "\(mine.stdout)\(mine.stderr)")
        #expect(try vpnctl(user.name, ["profiles", "--names"]).stdout == "work\n")
        let dead = try vpnctl(user.name, ["profiles", "--names", "--socket", "/tmp/vx-none-\(tag).sock"])
        #expect(dead.status == 0 && dead.stdout.isEmpty && dead.stderr.isEmpty, "completion stays quiet without vpnd")

        // The same bytes twice: sorted keys, nothing that depends on a dictionary's order.
        let first = try vpnctl(nil, ["status", "--json"]), second = try vpnctl(nil, ["status", "--json"])
        #expect(first.status == 0 && first.stdout == second.stdout && first.stdout.hasPrefix("{\"birthMarks\":"), "\(first.stdout)\n\(second.stdout)")
        // status: the user's has the profile it may use and nothing of the host's.
        let users = try vpnctl(user.name, ["status", "--json"])
        #expect(users.status == 0 && users.stdout.contains("\"name\":\"work\"") && !users.stdout.contains("\"name\":\"home\"")
                && !users.stdout.contains(daemon.policyDirectory) && !users.stdout.contains("\"sandbox\""), "\(users.stdout)\(users.stderr)")

        // members: a user's process in work, listed with its user, command and start.
        let member = try BackgroundProcess(try daemon.vpnexec(profile: "work", user: user.name, ["sleep", "60"]), cleanup: cleanup)
        try eventually("the member in profile work") { (try? String(contentsOfFile: "/proc/\(member.pid)/cgroup", encoding: .utf8))?.contains("vpn-work.slice") == true }
        let today = try Command.run(["date", "+%Y-%m-%d"]).trimmed
        let listed = try vpnctl(user.name, ["members", "-p", "work"])
        let rows = listed.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.first == ["PID", "USER", "PROFILE", "SINCE", "COMMAND"], "\(listed.stdout)\(listed.stderr)")
        #expect(rows.dropFirst().map { $0.count > 4 ? [$0[0], $0[1], $0[2], $0[3]] + $0[5...] : $0 }
                == [[String(member.pid), user.name, "work", today, "sleep", "60"]], "\(listed.stdout)")
        let refused = try vpnctl(user.name, ["members", "-p", "home"])
        #expect(refused.status == 1 && refused.stderr.contains("may not use profile \"home\""), "\(refused.stderr)")
        #expect(try vpnctl(nil, ["members"]).stdout.contains("\(member.pid) "), "root sees every profile's")

        // move --out: the inverse of move, under its rules: only root takes a process out.
        let userOut = try vpnctl(user.name, ["move", "--out", String(member.pid)])
        #expect(userOut.status == 1 && userOut.stderr.contains("only root may take a process out of a profile"), "\(userOut.stderr)")
        let out = try vpnctl(nil, ["move", "--out", String(member.pid)])
        #expect(out.status == 0 && out.stdout.contains("moved out of profile work into the root cgroup"), "\(out.stdout)\(out.stderr)")
        #expect(try String(contentsOfFile: "/proc/\(member.pid)/cgroup", encoding: .utf8).hasSuffix("::/\n"),
                "where its session would have it on a host without a cgroup manager")
        #expect(try vpnctl(nil, ["members", "-p", "work"]).stdout.split(separator: "\n").count == 1)
        let notIn = try vpnctl(nil, ["move", "--out", String(member.pid)])
        #expect(notIn.status == 1 && notIn.stderr.contains("is in no profile's cgroup"), "\(notIn.stderr)")
        #expect(try vpnctl(nil, ["move", "-p", "work", "--out", String(member.pid)]).status == 64)
        member.stop()

        // Completion offers the names the caller may use: vpnexec's script and vpnctl's own.
        // Copied where the test user can read it, whatever the checkout's permissions.
        let script = NSTemporaryDirectory() + "vx-\(tag)-vpnexec.bash"
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/completions/vpnexec.bash").standardized.path, toPath: script)
        chmod(script, 0o644)
        cleanup.add("remove \(script)") { try? FileManager.default.removeItem(atPath: script) }
        func complete(_ user: String?, _ setup: String, _ words: String, _ function: String) throws -> [String] {
            try Command.run(daemon.asUser(user) + (user == nil ? ["/usr/bin/env"] : [])
                            + ["VPNEXEC_SOCKET=\(daemon.socketPath)", "PATH=\(bin):/usr/sbin:/usr/bin:/sbin:/bin", "bash", "-c",
                               "\(setup); COMP_WORDS=(\(words) ''); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE='\(words) '; COMP_POINT=${#COMP_LINE}; "
                               // As bash calls a -F function: the command, the word, the word before.
                               + "\(function) \"${COMP_WORDS[0]}\" '' \"${COMP_WORDS[COMP_CWORD-1]}\"; printf '%s\\n' \"${COMPREPLY[@]}\""])
                .split(separator: "\n").map(String.init)
        }
        #expect(try complete(user.name, "source \(script)", "vpnexec -p", "_vpnexec") == ["work"])
        #expect(try complete(nil, "source \(script)", "vpnexec --profile", "_vpnexec").sorted() == ["home", "work"])
        #expect(try complete(user.name, "source <(vpnctl --generate-completion-script bash)", "vpnctl members -p", "_vpnctl") == ["work"])

        // desktop: a launcher made from the app's own entry, valid, refused for a profile the
        // user may not use, removed again.
        let home = NSTemporaryDirectory() + "vx-\(tag)-home"
        try FileManager.default.createDirectory(atPath: home + "/share/applications", withIntermediateDirectories: true)
        cleanup.add("remove \(home)") { try? FileManager.default.removeItem(atPath: home) }
        try """
            [Desktop Entry]
            Type=Application
            Name=Example Viewer
            Name[de]=Beispielbetrachter
            GenericName=Viewer
            Comment=Views examples
            Exec=viewer %U
            Icon=org.example.Viewer
            Categories=Utility;
            DBusActivatable=true
            Actions=new-window;

            [Desktop Action new-window]
            Name=New Window
            Exec=viewer --new-window
            """.write(toFile: home + "/share/applications/org.example.Viewer.desktop", atomically: true, encoding: .utf8)
        try Command.run(["chown", "-R", user.name, home])
        let environment = ["HOME=\(home)", "XDG_DATA_DIRS=\(home)/share"]
        let launcher = home + "/.local/share/applications/vpnexec-work-Viewer.desktop"
        let notAllowed = try vpnctl(user.name, ["desktop", "-p", "home", "Viewer"], environment: environment)
        #expect(notAllowed.status == 1 && notAllowed.stderr.contains("may not use profile \"home\"") && !FileManager.default.fileExists(atPath: home + "/.local"),
                "\(notAllowed.stderr)")
        // A name no profile has is unknown, for root and users alike, with the nearest name the
        // caller may use; a user is never told of a profile it may not use.
        let misspelt = try vpnctl(user.name, ["desktop", "-p", "wrok", "Viewer"], environment: environment)
        #expect(misspelt.status == 1 && misspelt.stderr.contains("unknown profile \"wrok\" (did you mean \"work\"?); nothing written"), "\(misspelt.stderr)")
        let unknown = try vpnctl(user.name, ["desktop", "-p", "hom", "Viewer"], environment: environment)
        #expect(unknown.status == 1 && unknown.stderr.contains("unknown profile \"hom\" (profiles you may use: work)") && !unknown.stderr.contains("home"),
                "\(unknown.stderr)")
        let rootUnknown = try vpnctl(nil, ["desktop", "-p", "hom", "Viewer"], environment: environment)
        #expect(rootUnknown.status == 1 && rootUnknown.stderr.contains("unknown profile \"hom\" (did you mean \"home\"?)"), "\(rootUnknown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/.local"))
        // Debian's Firefox is firefox-esr: an id no entry has is matched to those it begins.
        try """
            [Desktop Entry]
            Type=Application
            Name=Firefox ESR
            Exec=/usr/lib/firefox-esr/firefox-esr %u
            """.write(toFile: home + "/share/applications/firefox-esr.desktop", atomically: true, encoding: .utf8)
        let firefox = try vpnctl(user.name, ["desktop", "-p", "work", "firefox"], environment: environment)
        #expect(firefox.status == 1 && firefox.stderr.contains("no application firefox: ")
                && firefox.stderr.contains("; did you mean firefox-esr? (vpnctl desktop -p work firefox-esr)"), "\(firefox.stderr)")
        // Help in words, not a line continuation's backslash.
        let help = try vpnctl(user.name, ["help", "desktop"])
        #expect(help.status == 0 && help.stdout.contains("OVERVIEW:") && !help.stdout.contains("\\"), "\(help.stdout)")
        let made = try vpnctl(user.name, ["desktop", "-p", "work", "Viewer"], environment: environment)
        #expect(made.status == 0 && made.stdout.hasPrefix(launcher), "\(made.stdout)\(made.stderr)")
        let entry = try String(contentsOfFile: launcher, encoding: .utf8)
        let vpnexec = try Binaries.path("vpnexec")
        for line in ["Name=Example Viewer (work VPN)", "Name[de]=Beispielbetrachter (work VPN)", "Icon=org.example.Viewer",
                     "Exec=\(vpnexec) -p work -- viewer %U", "Exec=\(vpnexec) -p work -- viewer --new-window", "Name=New Window"] {
            #expect(entry.split(separator: "\n").contains(Substring(line)), "\(line) in:\n\(entry)")
        }
        #expect(!entry.contains("DBusActivatable"), "a desktop would start the app over D-Bus and never run Exec")
        let validated = try Command.status(["desktop-file-validate", launcher])
        #expect(validated.status == 0 && validated.stdout.isEmpty, "\(validated.stdout)\(validated.stderr)")
        // Firefox, already running outside the profile, would take the launch over: the
        // launcher starts an instance of its own, with a profile directory made for it (in a
        // home with a space: the Exec quotes it), and stays valid.
        let spaced = home + "/my home"
        try FileManager.default.createDirectory(atPath: spaced, withIntermediateDirectories: true)
        try Command.run(["chown", user.name, spaced])
        let browser = try vpnctl(user.name, ["desktop", "-p", "work", "firefox-esr"], environment: ["HOME=\(spaced)", "XDG_DATA_DIRS=\(home)/share"])
        let browserLauncher = spaced + "/.local/share/applications/vpnexec-work-firefox-esr.desktop"
        #expect(browser.status == 0 && browser.stdout.hasPrefix(browserLauncher), "\(browser.stdout)\(browser.stderr)")
        let browserEntry = (try? String(contentsOfFile: browserLauncher, encoding: .utf8)) ?? ""
        #expect(browserEntry.contains("\nExec=\(vpnexec) -p work -- /usr/lib/firefox-esr/firefox-esr --new-instance --profile \"\(spaced)/.mozilla/vpnexec-work\" %u\n"), "\(browserEntry)")
        var profileDirectory = stat()
        let found = stat(spaced + "/.mozilla/vpnexec-work", &profileDirectory) == 0
        #expect(found && profileDirectory.st_uid == getpwnam(user.name).pointee.pw_uid && profileDirectory.st_mode & 0o777 == 0o700,
                "the profile directory, the user's own: found \(found), uid \(profileDirectory.st_uid), mode \(String(profileDirectory.st_mode & 0o777, radix: 8))")
        let browserValid = try Command.status(["desktop-file-validate", browserLauncher])
        #expect(browserValid.status == 0 && browserValid.stdout.isEmpty, "\(browserValid.stdout)\(browserValid.stderr)")
        let removed = try vpnctl(user.name, ["desktop", "-p", "work", "--remove", "Viewer"], environment: environment)
        #expect(removed.status == 0 && !FileManager.default.fileExists(atPath: launcher), "\(removed.stderr)")
        #expect(try vpnctl(user.name, ["desktop", "-p", "work", "--remove", "Viewer"], environment: environment).status == 1)
    }
}
