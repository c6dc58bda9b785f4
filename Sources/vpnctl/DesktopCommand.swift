import ArgumentParser
import Control
import Descriptors
import Glibc
import Launch

extension VPNCtl {
    struct Desktop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a launcher that starts an application in a profile, or with --remove take it away.",
            discussion: """
            Writes ~/.local/share/applications/vpnexec-PROFILE-APP.desktop (under $XDG_DATA_HOME if set): the \
            application's own entry (found in $XDG_DATA_HOME and $XDG_DATA_DIRS) with " (PROFILE VPN)" added to its \
            name and its commands run through vpnexec, so the desktop's menu and launcher start it in the profile. \
            APP is a desktop file id: firefox, org.mozilla.firefox, or firefox.desktop (Debian's is firefox-esr).
            """)
        @OptionGroup var connection: Connection
        @Option(name: [.short, .long], help: "The profile.", completion: ProfileNames.completion) var profile: String
        @Flag(help: "Remove the launcher this command made.") var remove = false
        @Argument(help: "The application's desktop file id.") var application: String

        func run() throws {
            let environment = ProcessInfoEnvironment.current
            let id = application.hasSuffix(".desktop") ? String(application.dropLast(".desktop".count)) : application
            guard !id.isEmpty, !id.contains("/") else { throw ValidationError("APP is a desktop file id (firefox, org.mozilla.firefox), not a path") }
            let home = environment["HOME"] ?? "/"
            let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (home + "/.local/share")
            let target = dataHome + "/applications/vpnexec-\(profile)-\(id).desktop"
            if remove { return try removeLauncher(target) }

            // Only for a profile the caller may use: any other would refuse every launch.
            let usable = try connection.send(.profiles).profiles?.map(\.name) ?? []
            if !usable.contains(profile), let refusal = profileRefusal(usable: usable) {
                VPNCtl.fail(refusal + "; nothing written")
            }
            let directories = [dataHome] + (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
                .split(separator: ":").map(String.init)
            let source = try find(id, in: directories)
            let original: DesktopEntry, entry: DesktopEntry
            do {
                original = DesktopEntry(text: String(decoding: try WholeFile.read(source), as: UTF8.self))
                entry = try original.launcher(profile: profile, vpnexec: Self.vpnexecPath(), home: home)
            } catch let error as SystemError {
                VPNCtl.fail("cannot read \(error); nothing written")
            } catch {
                VPNCtl.fail("\(source): \(error); nothing written")
            }
            do {
                try WholeFile.createDirectories(dataHome + "/applications")
            } catch {
                VPNCtl.fail("cannot create directory \(error); nothing written")
            }
            do {
                for directory in Set(original.directoriesToMake(profile: profile, home: home)) { try WholeFile.createDirectories(directory, mode: 0o700) }
            } catch {
                VPNCtl.fail("cannot create directory \(error); nothing written")
            }
            do {
                try WholeFile.replace(target, with: Array(entry.text.utf8))
            } catch {
                VPNCtl.fail("cannot write \(error)")
            }
            print("\(target): \(entry.value("Name") ?? id), from \(source)")
        }

        /// The application's entry: `ID.desktop` in the first directory that has one, else
        /// the one entry whose reverse-DNS id ends in `.ID` (firefox: org.mozilla.firefox).
        func find(_ id: String, in directories: [String]) throws -> String {
            for directory in directories where access("\(directory)/applications/\(id).desktop", F_OK) == 0 {
                return "\(directory)/applications/\(id).desktop"
            }
            let matches = directories.flatMap { directory in
                Self.names(in: directory + "/applications")
                    .filter { $0.hasSuffix(".\(id).desktop") && !$0.hasPrefix("vpnexec-") }.sorted()
                    .map { "\(directory)/applications/\($0)" }
            }
            guard matches.count == 1 else {
                VPNCtl.fail(matches.isEmpty ? "no application \(id): no \(id).desktop in \(directories.map { $0 + "/applications" }.joined(separator: ", "))"
                                              + applicationSuggestion(for: id, in: directories)
                                     : "\(id) could be any of \(matches.joined(separator: ", ")); name one by its id")
            }
            return matches[0]
        }

        /// The entries of a directory; none if it cannot be read (XDG_DATA_DIRS may name
        /// directories a system does not have).
        static func names(in directory: String) -> [String] { Directory.names(of: directory) }

        func removeLauncher(_ target: String) throws {
            let data: [UInt8]
            do { data = try WholeFile.read(target) } catch {
                VPNCtl.fail(error.code == ENOENT ? "no launcher \(target)" : "cannot read \(error)")
            }
            guard DesktopEntry(text: String(decoding: data, as: UTF8.self)).value(DesktopEntry.profileKey) == profile else {
                VPNCtl.fail("\(target) was not made by vpnctl desktop -p \(profile); left alone")
            }
            guard unlink(target) == 0 else { VPNCtl.fail(SystemError("cannot remove \(target)").description) }
            print("removed \(target)")
        }

        /// The vpnexec installed beside this vpnctl, else the one on PATH.
        static func vpnexecPath() -> String {
            var buffer = [CChar](repeating: 0, count: 4096)
            let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
            guard count > 0 else { return "vpnexec" }
            let me = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let sibling = String(me[..<(me.lastIndex(of: "/") ?? me.startIndex)]) + "/vpnexec"
            return access(sibling, X_OK) == 0 ? sibling : "vpnexec"
        }
    }
}
