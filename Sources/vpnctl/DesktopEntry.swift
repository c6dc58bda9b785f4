import Launch

/// A desktop entry (freedesktop.org's Desktop Entry Specification) as lines, and the
/// launcher `vpnctl desktop` makes of an application's: the same entry, named
/// "NAME (PROFILE VPN)", whose commands run through vpnexec. Pure, for tests.
struct DesktopEntry: Equatable {
    /// Lines as read, so that comments, unknown keys and localized values pass through.
    var lines: [String]

    init(text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { String($0.hasSuffix("\r") ? $0.dropLast() : $0) }
        if lines.last == "" { lines.removeLast() }
    }

    var text: String { lines.map { $0 + "\n" }.joined() }

    /// The key our launchers carry: `--remove` deletes only files that have it.
    static let profileKey = "X-Vpnexec-Profile"

    /// The value of `key` in `group` ("Desktop Entry", "Desktop Action new-window").
    func value(_ key: String, in group: String = "Desktop Entry") -> String? {
        var current: String?
        for line in lines {
            if let name = Self.groupName(line) { current = name; continue }
            if current == group, let (k, v) = Self.keyValue(line), k == key { return v }
        }
        return nil
    }

    /// The launcher for `profile`: Name and its translations gain " (PROFILE VPN)", every
    /// Exec (the entry's and its actions') runs through `vpnexec -p PROFILE --`, and
    /// D-Bus activation is dropped (a desktop would start the app by its bus name and never
    /// run Exec). A browser that hands a launch to its instance already running (outside
    /// the profile) gets the arguments of an instance of its own, its data below `home`.
    /// Refuses entries that are not applications with a command.
    func launcher(profile: String, vpnexec: String, home: String) throws(DesktopEntryError) -> DesktopEntry {
        guard value("Type") == "Application", let exec = value("Exec"), !exec.isEmpty else {
            throw .notAnApplication
        }
        var out = DesktopEntry(text: "")
        var group: String?
        for line in lines {
            if let name = Self.groupName(line) {
                group = name
                out.lines.append(line)
                if name == "Desktop Entry" { out.lines.append("\(Self.profileKey)=\(profile)") }
                continue
            }
            guard let (key, value) = Self.keyValue(line), let group, group == "Desktop Entry" || group.hasPrefix("Desktop Action ") else {
                out.lines.append(line)
                continue
            }
            if key == Self.profileKey || (group == "Desktop Entry" && key == "DBusActivatable") { continue }
            if key == "Exec" {
                out.lines.append("Exec=\(vpnexec) -p \(profile) -- \(Self.separated(value, profile: profile, home: home))")
            } else if group == "Desktop Entry", key == "Name" || key.hasPrefix("Name[") {
                out.lines.append("\(key)=\(value) (\(profile) VPN)")
            } else {
                out.lines.append(line)
            }
        }
        return out
    }

    /// An Exec value with a single-instance program's separation arguments after its
    /// program, unless it asks for a separate instance already.
    static func separated(_ exec: String, profile: String, home: String) -> String {
        let words = exec.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = words.first.map(unquoted), let program = SingleInstanceProgram.launched(by: command),
              !program.asksForSeparateInstance(words.map(unquoted)) else { return exec }
        let arguments = program.separationArguments(command: command, profile: profile, home: home).map(quoted)
        return ([words[0]] + arguments + words.dropFirst()).joined(separator: " ")
    }

    /// The directories the launcher made of this entry needs before its first start.
    func directoriesToMake(profile: String, home: String) -> [String] {
        lines.compactMap { line in
            guard let (key, value) = Self.keyValue(line), key == "Exec", Self.separated(value, profile: profile, home: home) != value,
                  let command = value.split(separator: " ").first.map({ Self.unquoted(String($0)) }) else { return nil }
            return SingleInstanceProgram.launched(by: command)?.directoryToMake(profile: profile, home: home)
        }
    }

    /// An argument as the Desktop Entry Specification's Exec quotes it, where it holds a
    /// reserved character: in double quotes, with `"`, `` ` ``, `$` and `\` escaped by a
    /// backslash, each backslash then doubled for the string escapes read first (a literal
    /// backslash is four in the file).
    static func quoted(_ argument: String) -> String {
        let reserved = Set(" \t\n\"'\\><~|&;$*?#()`")
        guard argument.contains(where: reserved.contains) else { return argument }
        var out = "\""
        for character in argument {
            switch character {
            case "\\": out += "\\\\\\\\"
            case "\"", "`", "$": out += "\\\\" + String(character)
            default: out.append(character)
            }
        }
        return out + "\""
    }

    static func unquoted(_ word: String) -> String {
        word.count >= 2 && word.hasPrefix("\"") && word.hasSuffix("\"") ? String(word.dropFirst().dropLast()) : word
    }

    static func groupName(_ line: String) -> String? {
        guard line.hasPrefix("["), line.hasSuffix("]") else { return nil }
        return String(line.dropFirst().dropLast())
    }

    /// `Key=Value`, `Key[locale]=Value`; spaces around the `=` are allowed.
    static func keyValue(_ line: String) -> (String, String)? {
        guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { return nil }
        func trimmed(_ part: Substring) -> String {
            var part = part
            while part.first == " " { part.removeFirst() }
            while part.last == " " { part.removeLast() }
            return String(part)
        }
        return (trimmed(line[..<equals]), trimmed(line[line.index(after: equals)...]))
    }
}
