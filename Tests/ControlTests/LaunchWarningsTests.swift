import Control
import Glibc
import Testing
import Launch

/// vpnexec's warnings before it execs (issue 43, items 2 and 3): which launches look for a
/// running instance, what counts as one outside the profile (a /proc of plain files here),
/// the lines' words, and the answer that carries what vpnd knows.
@Suite struct LaunchWarningsTests {
    @Test func onlyProgramsThatHandLaunchesOverAreLookedFor() throws {
        for command in ["firefox", "/usr/bin/firefox-esr", "firefox-bin", "chromium", "google-chrome-stable", "brave-browser", "code", "thunderbird"] {
            #expect(SingleInstanceProgram.launched(by: command) != nil, "\(command)")
        }
        for command in ["curl", "firefox.sh", "python3", "ssh", "/opt/firefox/", "sh"] {
            #expect(SingleInstanceProgram.launched(by: command) == nil, "\(command)")
        }
        // Debian's /usr/bin/firefox runs /usr/lib/firefox-esr/firefox-esr: the same browser.
        let firefox = try #require(SingleInstanceProgram.launched(by: "firefox"))
        #expect(firefox.runs(as: "firefox-esr") && firefox.runs(as: "firefox"))
        #expect(!firefox.runs(as: "chromium") && !firefox.runs(as: "Web Content"))
        let chrome = try #require(SingleInstanceProgram.launched(by: "google-chrome"))
        #expect(chrome.runs(as: "chrome") && !chrome.runs(as: "chromium"))
        // chromium-browser's comm is cut to 15 bytes.
        #expect(try #require(SingleInstanceProgram.launched(by: "chromium-browser")).runs(as: "chromium-browse"))
    }

    @Test func aLaunchThatAsksForItsOwnInstanceIsNotWarned() throws {
        let firefox = try #require(SingleInstanceProgram.launched(by: "firefox"))
        #expect(firefox.asksForSeparateInstance(["--new-instance", "-P", "work"]))
        #expect(firefox.asksForSeparateInstance(["-no-remote"]))
        #expect(!firefox.asksForSeparateInstance(["-P", "work", "https://example.com"]))
        let chromium = try #require(SingleInstanceProgram.launched(by: "chromium"))
        #expect(chromium.asksForSeparateInstance(["--user-data-dir=/tmp/c"]) && chromium.asksForSeparateInstance(["--user-data-dir", "/tmp/c"]))
        #expect(!chromium.asksForSeparateInstance(["--new-window"]))
        #expect(firefox.separateInstance(command: "firefox-esr", profile: "work") == "firefox-esr --new-instance -P work")
        #expect(chromium.separateInstance(command: "/usr/bin/chromium", profile: "work") == "/usr/bin/chromium --user-data-dir=\"$HOME/.config/chromium-work\"")
    }

    /// A desktop launcher's separate instance: a Firefox profile directory of its own (made
    /// before the first start: Firefox waits on a dialog for a missing one), a Chromium data
    /// directory, each below the home given.
    @Test func aLauncherStartsAnInstanceOfItsOwn() throws {
        let firefox = try #require(SingleInstanceProgram.launched(by: "/usr/lib/firefox-esr/firefox-esr"))
        #expect(firefox.separationArguments(command: "firefox-esr", profile: "work", home: "/home/a") == ["--new-instance", "--profile", "/home/a/.mozilla/vpnexec-work"])
        #expect(firefox.directoryToMake(profile: "work", home: "/home/a") == "/home/a/.mozilla/vpnexec-work")
        let chromium = try #require(SingleInstanceProgram.launched(by: "chromium"))
        #expect(chromium.separationArguments(command: "/usr/bin/chromium", profile: "work", home: "/home/a") == ["--user-data-dir=/home/a/.config/chromium-work"])
        #expect(chromium.directoryToMake(profile: "work", home: "/home/a") == nil)
    }

    @Test func theWarningsAreOneLineEachWithWhatToDo() {
        #expect(LaunchWarnings.alreadyRunning("firefox-esr", pid: 1234, profile: "work", separateInstance: "firefox --new-instance -P work")
            == "vpnexec: warning: firefox-esr already runs for you outside profile work (pid 1234): this launch may just open a window in it, outside the profile; start a separate instance (vpnexec -p work -- firefox --new-instance -P work), quit the running one first, or have the policy put it in the profile wherever it starts (route.executables, apps)\n")
        #expect(LaunchWarnings.heldTunnel(HeldTunnel(interface: "wg0", state: HeldTunnel.missing), profile: "work", command: "/usr/bin/curl")
            == "vpnexec: warning: profile work's tunnel wg0 is missing: until it is there, curl's connections fail (\"No route to host\"); nothing leaves outside the tunnel\n")
        #expect(LaunchWarnings.heldTunnel(HeldTunnel(interface: "wg0", state: HeldTunnel.down), profile: "work", command: "firefox")
            == "vpnexec: warning: profile work's tunnel wg0 is down: until it is up, firefox's connections fail (\"No route to host\") or time out; nothing leaves outside the tunnel\n")
        #expect(LaunchWarnings.heldTunnel(HeldTunnel(interface: "vx0", state: HeldTunnel.heldDown), profile: "work", command: "firefox")
            == "vpnexec: warning: profile work's tunnel vx0 is held down (vpnctl down work): until `vpnctl up work`, firefox's connections time out; nothing leaves outside the tunnel\n")
        #expect(LaunchWarnings.heldTunnel(HeldTunnel(interface: "vx-travel", state: HeldTunnel.blocked), profile: "travel", command: "firefox")
            == "vpnexec: warning: profile travel's tunnel vx-travel is blocked on this network (a trusted-network rule; `vpnctl status` says which): until the host is on another, firefox's connections fail or time out; nothing leaves outside the tunnel\n")
        for state in [HeldTunnel.missing, HeldTunnel.down, HeldTunnel.heldDown, HeldTunnel.blocked, "a-later-state"] {
            let line = LaunchWarnings.heldTunnel(HeldTunnel(interface: "wg0", state: state), profile: "work", command: "firefox")
            #expect(line.hasPrefix("vpnexec: warning: ") && line.filter { $0 == "\n" }.count == 1 && line.hasSuffix("\n"), "\(line)")
        }
    }

    @Test func aProcessInTheProfilesCgroupsOrBelowIsInIt() {
        let launch = LaunchReport(cgroups: ["vpn.slice/vpn-work.slice", "user.slice/user-1000.slice/app-firefox-9.scope"])
        #expect(launch.holds(cgroup: "/vpn.slice/vpn-work.slice"))
        #expect(launch.holds(cgroup: "/vpn.slice/vpn-work.slice/vpnexec-work-42.scope"))
        #expect(launch.holds(cgroup: "/user.slice/user-1000.slice/app-firefox-9.scope"))
        #expect(!launch.holds(cgroup: "/vpn.slice/vpn-work.slice2"))
        #expect(!launch.holds(cgroup: "/user.slice/user-1000.slice/session-2.scope"))
    }

    /// A /proc of plain files: Debian's Firefox (its executable replaced by an upgrade)
    /// outside the profile, a content process of it, one inside, another user's and a
    /// chromium.
    @Test func theRunningInstanceIsTheUsersLowestPidOutsideTheProfile() throws {
        let proc = "/tmp/vx-proc-\(getpid())"
        var made: [String] = []
        defer {
            for directory in made { for file in ["comm", "cgroup", "exe"] { unlink(directory + "/" + file) }; rmdir(directory) }
            rmdir(proc)
        }
        func process(_ pid: Int32, comm: String, exe: String, cgroup: String, owner: uid_t = getuid()) {
            let directory = "\(proc)/\(pid)"
            made.append(directory)
            mkdir(directory, 0o755)
            write(directory + "/comm", comm + "\n")
            write(directory + "/cgroup", "0::/\(cgroup)\n")
            symlink(exe, directory + "/exe")
            if owner != getuid() { chown(directory, owner, 0) }
        }
        mkdir(proc, 0o755)
        let work = LaunchReport(cgroups: ["vpn.slice/vpn-work.slice"])
        let firefox = try #require(SingleInstanceProgram.launched(by: "firefox"))
        process(300, comm: "firefox-esr", exe: "/usr/lib/firefox-esr/firefox-esr", cgroup: "vpn.slice/vpn-work.slice/vpnexec-work-300.scope")
        process(50, comm: "chromium", exe: "/usr/lib/chromium/chromium", cgroup: "user.slice/session-2.scope")
        #expect(RunningInstances.outside(work, program: firefox, uid: getuid(), own: 999, proc: proc) == nil, "the one in the profile does not count")
        process(420, comm: "Web Content", exe: "/usr/lib/firefox-esr/firefox-esr (deleted)", cgroup: "user.slice/session-2.scope")
        process(400, comm: "MainThread", exe: "/usr/lib/firefox-esr/firefox-esr (deleted)", cgroup: "user.slice/session-2.scope")
        process(999, comm: "firefox", exe: "/usr/lib/firefox-esr/firefox-esr", cgroup: "user.slice/session-2.scope")
        let found = RunningInstances.outside(work, program: firefox, uid: getuid(), own: 999, proc: proc)
        #expect(found?.pid == 400 && found?.name == "firefox-esr", "\(String(describing: found))")
        if getuid() == 0 {
            process(100, comm: "firefox-esr", exe: "/usr/lib/firefox-esr/firefox-esr", cgroup: "user.slice/session-3.scope", owner: 4711)
            #expect(RunningInstances.outside(work, program: firefox, uid: getuid(), own: 999, proc: proc)?.pid == 400, "another user's is not the caller's")
            #expect(RunningInstances.outside(work, program: firefox, uid: 4711, own: 999, proc: proc)?.pid == 100)
        }
    }

    @Test func aLaunchAnswerCarriesTheReportAndAnOlderOneReadsWithout() throws {
        var answer = ControlResponse(ok: true, message: "pid 7 is in profile work",
                                     launch: LaunchReport(cgroups: ["vpn.slice/vpn-work.slice"], heldTunnel: HeldTunnel(interface: "wg0", state: HeldTunnel.down)))
        #expect(try ControlCoding.decode(ControlResponse.self, from: ControlCoding.encode(answer)) == answer)
        let older = try ControlCoding.decode(ControlResponse.self, from: Array("{\"ok\":true,\"message\":\"pid 7 is in profile work\"}".utf8))
        answer.launch = nil
        #expect(older == answer)
    }

    func write(_ path: String, _ text: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
    }
}
