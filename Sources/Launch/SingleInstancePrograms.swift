/// Programs that hand a launch over to an instance of theirs already running for the user: a
/// browser started again asks the running one for a window and exits (status 0), so a
/// window `vpnexec -p work -- firefox` seems to open belongs to the instance outside the
/// profile. vpnexec looks for a running instance of these alone (the launch's command by
/// its file name), so every other launch pays nothing for it.
public struct SingleInstanceProgram: Hashable, Sendable {
    /// How a separate instance is started.
    public enum Separation: Hashable, Sendable {
        /// Firefox and its kin: `--new-instance -P PROFILE` (or `--no-remote`).
        case mozilla
        /// Chromium, its kin and Electron apps: a data directory of its own (`--user-data-dir`).
        case chromium
    }

    /// The words that start it (a command's file name).
    public let commands: Set<String>
    /// What its processes are called: their comm, or their executable's file name (Debian's
    /// /usr/bin/firefox-esr runs /usr/lib/firefox-esr/firefox-esr; chromium-browser's comm
    /// is cut to 15 bytes).
    public let processNames: Set<String>
    public let separation: Separation

    public static let known: [SingleInstanceProgram] = [
        .init(["firefox", "firefox-esr", "firefox-bin", "firefox-developer-edition", "firefox-nightly"],
              ["firefox", "firefox-esr", "firefox-bin"], .mozilla),
        .init(["librewolf"], ["librewolf"], .mozilla),
        .init(["waterfox"], ["waterfox"], .mozilla),
        .init(["thunderbird"], ["thunderbird", "thunderbird-bin"], .mozilla),
        .init(["chromium", "chromium-browser"], ["chromium", "chromium-browser", "chromium-browse"], .chromium),
        .init(["google-chrome", "google-chrome-stable", "google-chrome-beta", "google-chrome-unstable", "chrome"], ["chrome"], .chromium),
        .init(["brave", "brave-browser", "brave-browser-stable"], ["brave"], .chromium),
        .init(["microsoft-edge", "microsoft-edge-stable", "msedge"], ["msedge"], .chromium),
        .init(["vivaldi", "vivaldi-stable"], ["vivaldi", "vivaldi-bin"], .chromium),
        .init(["opera"], ["opera"], .chromium),
        .init(["code", "code-insiders", "codium", "code-oss"], ["code", "code-insiders", "codium", "code-oss"], .chromium),
    ]

    init(_ commands: Set<String>, _ processNames: Set<String>, _ separation: Separation) {
        self.commands = commands
        self.processNames = processNames
        self.separation = separation
    }

    /// The program a launch's command starts, by the command's file name (`firefox`,
    /// `/usr/bin/firefox-esr`); nil for every other command.
    public static func launched(by command: String) -> SingleInstanceProgram? {
        let name = command.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? command
        return known.first { $0.commands.contains(name) }
    }

    /// Whether a process of this name (its comm, or its executable's file name) is one of
    /// this program's.
    public func runs(as name: String) -> Bool { processNames.contains(name) }

    /// Whether the launch's arguments already ask for an instance of its own, which no
    /// running one takes over.
    public func asksForSeparateInstance(_ arguments: [String]) -> Bool {
        switch separation {
        case .mozilla:
            arguments.contains { ["--new-instance", "-new-instance", "--no-remote", "-no-remote"].contains($0) }
        case .chromium:
            arguments.contains { $0 == "--user-data-dir" || $0.hasPrefix("--user-data-dir=") }
        }
    }

    /// The command line that starts a separate instance for the profile.
    public func separateInstance(command: String, profile: String) -> String {
        switch separation {
        case .mozilla: "\(command) --new-instance -P \(profile)"
        case .chromium: "\(command) --user-data-dir=\"$HOME/.config/\(Self.fileName(command))-\(profile)\""
        }
    }

    /// The arguments that start an instance of its own for the profile, its data below
    /// `home` written out (a desktop launcher's Exec is run by no shell): Firefox and its kin
    /// a profile directory of the launcher's own (`directoryToMake`), the others a data
    /// directory.
    public func separationArguments(command: String, profile: String, home: String) -> [String] {
        switch separation {
        case .mozilla: ["--new-instance", "--profile", mozillaProfile(profile: profile, home: home)]
        case .chromium: ["--user-data-dir=\(home)/.config/\(Self.fileName(command))-\(profile)"]
        }
    }

    /// The directory that must exist before the first start: Firefox started with a
    /// `--profile` directory that is missing waits on a dialog (headless: for ever), where
    /// Chromium makes its data directory itself.
    public func directoryToMake(profile: String, home: String) -> String? {
        separation == .mozilla ? mozillaProfile(profile: profile, home: home) : nil
    }

    private func mozillaProfile(profile: String, home: String) -> String { "\(home)/.mozilla/vpnexec-\(profile)" }

    static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
