import Control
import FoundationEssentials
import Glibc
import Launch

/// What `vpnctl desktop` says when the profile or the application named is not there: which
/// one was meant, from what the caller may see.
extension VPNCtl.Desktop {
    /// Why `profile`, which is not among the profiles the caller may use, is refused; nil if
    /// vpnd lets the caller use it after all (a reload in between). Root's list is every
    /// profile, so a name not in it is unknown. A user's list is only what it may use: vpnd's
    /// answer about that one profile (`members`, which needs the same permission) tells an
    /// unknown name, suggested only the user's own profiles, from a profile whose rule
    /// refuses the user, in the words vpnexec would get.
    func profileRefusal(usable: [String]) -> String? {
        let root = getuid() == 0
        if !root {
            let answer = try? ControlClient.send(.members(profile: profile), socketPath: connection.socketPath)
            if answer?.ok == true { return nil }
            if let message = answer?.message { return message }
        }
        return UnknownProfile.message(profile, among: usable, everyProfile: root)
    }

    /// For an id no entry has: the entries whose id, or whose command, begins with it
    /// (Debian's firefox-esr for firefox); else the programs on PATH that do, which have no
    /// entry to make a launcher of but run in the profile with vpnexec. Empty if none.
    func applicationSuggestion(for id: String, in directories: [String]) -> String {
        let wanted = id.lowercased()
        func begins(_ name: some StringProtocol) -> Bool { name.lowercased().hasPrefix(wanted) }
        var ids: [String] = []
        for directory in directories {
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/applications")) ?? []).sorted()
            for file in files where file.hasSuffix(".desktop") && !file.hasPrefix("vpnexec-") {
                let candidate = String(file.dropLast(".desktop".count))
                guard !ids.contains(candidate) else { continue }
                // The id, its last reverse-DNS part (org.mozilla.firefox_esr), or its command.
                var matches = begins(candidate) || begins(candidate.split(separator: ".").last ?? "")
                if !matches, let data = try? Data(contentsOf: URL(fileURLWithPath: "\(directory)/applications/\(file)")),
                   let program = DesktopEntry(text: String(decoding: data, as: UTF8.self)).value("Exec")?.split(separator: " ").first {
                    matches = begins(program.split(separator: "/").last ?? "")
                }
                if matches { ids.append(candidate) }
            }
        }
        if let first = ids.first {
            return "; did you mean \(ids.prefix(5).joined(separator: " or "))? (vpnctl desktop -p \(profile) \(first))"
        }
        let path = ProcessInfoEnvironment.current["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        let programs = Set(path.split(separator: ":").flatMap { directory in
            ((try? FileManager.default.contentsOfDirectory(atPath: String(directory))) ?? []).filter { name in
                var status = stat()
                return begins(name) && stat("\(directory)/\(name)", &status) == 0 && status.st_mode & S_IFMT == S_IFREG
                    && access("\(directory)/\(name)", X_OK) == 0
            }
        }).sorted()
        guard let program = programs.first else { return "" }
        return "; \(programs.prefix(5).joined(separator: ", ")) \(programs.count == 1 ? "has" : "have") no desktop entry to make a launcher of: "
            + "vpnexec -p \(profile) -- \(program) runs it in the profile"
    }
}
