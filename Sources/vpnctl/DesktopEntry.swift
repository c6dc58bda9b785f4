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

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

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
    /// run Exec). Refuses entries that are not applications with a command.
    func launcher(profile: String, vpnexec: String) throws(Failure) -> DesktopEntry {
        guard value("Type") == "Application", let exec = value("Exec"), !exec.isEmpty else {
            throw Failure(description: "not an application with a command (Type=Application and Exec=)")
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
                out.lines.append("Exec=\(vpnexec) -p \(profile) -- \(value)")
            } else if group == "Desktop Entry", key == "Name" || key.hasPrefix("Name[") {
                out.lines.append("\(key)=\(value) (\(profile) VPN)")
            } else {
                out.lines.append(line)
            }
        }
        return out
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
