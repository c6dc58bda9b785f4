import Control
import Foundation
import Testing

/// docs/reference.md, "Status as JSON and metrics", against what vpnctl emits: every key of
/// `vpnctl status --json` for a report with every field set (StatusJSONTests' golden one),
/// and every metric family of `vpnctl metrics` for it, is in the reference's tables, and the
/// tables hold nothing else. A new field fails here until it is in the fixture, which fails
/// until the field is documented.
@Suite struct StatusReferenceTests {
    static var full: StatusReport { StatusJSONTests.report(reversed: false) }

    /// The rows of the table under `### heading` in the reference's status section: the first
    /// cell (without its backquotes), then the others.
    static func table(_ heading: String) throws -> [(String, [String])] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/reference.md").standardized.path
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring("### " + heading)) else { throw ReferenceMissing(heading: heading) }
        var rows: [(String, [String])] = []
        for line in lines[(start + 1)...] {
            if line.hasPrefix("#") { break }
            guard line.hasPrefix("| `") else { continue }
            let cells = line.dropFirst().split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            rows.append((cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")), Array(cells.dropFirst())))
        }
        return rows
    }

    struct ReferenceMissing: Error { var heading: String }

    /// Every key path of a JSON value: `a.b` for an object's key, `a[]` for a list's
    /// elements; a `{packets, bytes}` object (traffic) and a map the reference documents as
    /// `PATH.*` end a path.
    static func keyPaths(_ value: Any, _ path: String, maps: Set<String>, into paths: inout Set<String>) {
        if let object = value as? [String: Any] {
            guard Set(object.keys) != ["packets", "bytes"] else { return }
            for (key, child) in object {
                let childPath = path.isEmpty ? key : path + "." + key
                guard !maps.contains(childPath + ".*") else {
                    paths.insert(childPath + ".*")
                    continue
                }
                paths.insert(childPath)
                keyPaths(child, childPath, maps: maps, into: &paths)
            }
        } else if let list = value as? [Any] {
            for element in list { keyPaths(element, path + "[]", maps: maps, into: &paths) }
        }
    }

    /// The fields of a value (and of the values in it) that are nil or empty, by path; a
    /// field of a list's elements counts as set when one element has it.
    static func unset(_ value: Any, _ path: String) -> Set<String> {
        let mirror = Mirror(reflecting: value)
        func inAll(_ values: [Any], _ path: String) -> Set<String> {
            guard let first = values.first else { return [path] }
            return values.dropFirst().reduce(unset(first, path)) { $0.intersection(unset($1, path)) }
        }
        switch mirror.displayStyle {
        case .optional:
            guard let wrapped = mirror.children.first?.value else { return [path] }
            return unset(wrapped, path)
        case .collection, .set:
            return inAll(mirror.children.map(\.value), path + "[]")
        case .dictionary:
            return inAll(mirror.children.compactMap { Mirror(reflecting: $0.value).children.dropFirst().first?.value }, path + ".*")
        case .struct:
            return mirror.children.reduce(into: []) { $0.formUnion(unset($1.value, path + "." + ($1.label ?? "?"))) }
        default:
            return []
        }
    }

    @Test func theFullReportHasEveryFieldSet() {
        #expect(Self.unset(Self.full, "").isEmpty, "set these in StatusJSONTests.report: \(Self.unset(Self.full, "").sorted())")
    }

    @Test func theReferenceListsExactlyTheKeysOfTheJSON() throws {
        let documented = try Self.table("Status JSON keys").map(\.0)
        #expect(documented.count == Set(documented).count, "listed twice: \(documented.filter { key in documented.filter { $0 == key }.count > 1 })")
        let json = try JSONSerialization.jsonObject(with: Data(ControlCoding.encode(Self.full)))
        var emitted = Set<String>()
        Self.keyPaths(json, "", maps: Set(documented.filter { $0.hasSuffix(".*") }), into: &emitted)
        #expect(emitted.subtracting(documented).isEmpty, "undocumented keys: \(emitted.subtracting(documented).sorted())")
        #expect(Set(documented).subtracting(emitted).isEmpty, "documented, never emitted: \(Set(documented).subtracting(emitted).sorted())")
    }

    /// Each family's name and type (from `# TYPE`) and the names of its samples' labels.
    static func families(_ text: String) -> [String: (type: String, labels: Set<String>)] {
        var families: [String: (type: String, labels: Set<String>)] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if line.hasPrefix("# TYPE ") {
                families[String(words[2])] = (String(words[3]), [])
            } else if !line.hasPrefix("#"), let name = words.first?.split(separator: "{").first {
                let labels = line.split(separator: "{").dropFirst().first?.split(separator: "}").first?
                    .split(separator: ",").compactMap { $0.split(separator: "=").first.map(String.init) } ?? []
                families[String(name)]?.labels.formUnion(labels)
            }
        }
        return families
    }

    @Test func theReferenceListsExactlyTheMetrics() throws {
        let documented = try Self.table("Metrics")
        let rendered = Self.families(MetricsText.render(Self.full, now: 1_700_000_300))
        #expect(Set(documented.map(\.0)) == Set(rendered.keys),
                "undocumented: \(Set(rendered.keys).subtracting(documented.map(\.0)).sorted()); documented, never rendered: \(Set(documented.map(\.0)).subtracting(rendered.keys).sorted())")
        for (name, cells) in documented {
            guard let family = rendered[name] else { continue }
            let labels = Set(cells[1].split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }.filter { !$0.isEmpty })
            #expect(cells[0] == family.type && labels == family.labels, "\(name): documented \(cells[0]) \(labels.sorted()), rendered \(family.type) \(family.labels.sorted())")
        }
    }

    /// Prometheus' own linter (Debian's prometheus package, scripts/install-deps): the text
    /// parses, and names, units, types and help follow its rules.
    @Test func promtoolFindsNothingToSayAboutTheMetrics() throws {
        let text = MetricsText.render(Self.full, now: 1_700_000_300)
        let promtool = try #require((ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
            .map { $0 + "/promtool" }.first { FileManager.default.isExecutableFile(atPath: $0) }, "promtool is not installed (scripts/install-deps)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: promtool)
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        (process.standardInput, process.standardOutput, process.standardError) = (input, output, output)
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && said.isEmpty, "promtool check metrics: \(said)\n\(text)")
    }

    @Test func aUsersViewHasItsProfilesAndNothingHostWide() throws {
        var report = Self.full
        var home = report.profiles[0]
        home.name = "home"
        report.profiles.append(home)
        report.birthMarks.append(BirthMarkReport(cgroup: "vpn.slice/vpn-home.slice", profile: "home", state: BirthMarkReport.marked, mark: "0x2000000"))
        report.heldCgroups.append(HeldCgroupReport(cgroup: "vpn.slice/vpn-gone.slice", profile: nil, missing: [], reason: "its profile (gone) was removed"))
        report.heldNamespaces.append(HeldNamespaceReport(cookie: 4098, packets: 3, pid: 4243, cgroup: "vpn.slice/vpn-home.slice/app.scope", profile: "home"))
        report.routedNamespaces.append(RoutedNamespaceReport(cookie: 4100, profile: "home", interfaces: ["ve-home"]))
        report.relayedNamespaces = [RelayedNamespaceReport(cookie: 4101, profile: "work", interfaces: ["tap0"]),
                                    RelayedNamespaceReport(cookie: 4102, profile: "home", interfaces: ["tap0"])]
        let view = report.forUser(usable: ["home"])
        #expect(view.profiles.map(\.name) == ["home"] && view.birthMarks.map(\.profile) == ["home"] && view.heldCgroups.isEmpty)
        #expect(view.heldNamespaces.map(\.cookie) == [4098] && view.routedNamespaces.map(\.cookie) == [4100]
                && view.relayedNamespaces.map(\.cookie) == [4102], "work's namespaces are not this user's")
        #expect(view.systemProfile == nil, "system mode's profile is work, which this user may not use")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(ControlCoding.encode(view))) as? [String: Any])
        #expect(Set(json.keys) == ["schema", "version", "daemonPID", "profiles", "birthMarks", "heldCgroups", "heldNamespaces", "routedNamespaces", "relayedNamespaces"], "\(json.keys.sorted())")
        // Its metrics: the profile's, and no host-wide family.
        let families = Self.families(MetricsText.render(view, now: 1_700_000_300)).keys
        #expect(!families.contains("vpnexec_bypass_moves_total") && !families.contains("vpnexec_last_reload_successful") && families.contains("vpnexec_profile_members"))
        #expect(report.forUser(usable: ["work"]).systemProfile == "work")
    }
}
