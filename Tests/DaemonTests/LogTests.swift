import Foundation
import ServiceSupport
import Testing

/// vpnd's log: "<N>" priorities for journald only; a terminal, a pipe or a file gets the
/// lines as a person reads them (issue 43: "<6>" on a terminal).
@Suite struct LogTests {
    @Test func priorityPrefixesOnlyWhenAsked() {
        #expect(Log(priorityPrefixes: true).text(.warning, "one\ntwo") == "<4>one\n<4>two\n")
        #expect(Log(priorityPrefixes: false).text(.warning, "one\ntwo") == "one\ntwo\n")
        // Off the journal, each line is the program's, as vpnexec's and vpnctl's errors are.
        #expect(Log(priorityPrefixes: false, program: "vpnd").text(.error, "one\ntwo") == "vpnd: one\nvpnd: two\n")
        #expect(Log(priorityPrefixes: true, program: "vpnd").text(.error, "one") == "<3>one\n")
    }

    /// sd-daemon's rule: JOURNAL_STREAM is "DEVICE:INODE" of the journal's stream, and stderr
    /// is the journal only while it is still that file (a redirected child keeps the variable).
    @Test func journalIsTheStreamJournalStreamNames() throws {
        let path = NSTemporaryDirectory() + "vx-log-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer { close(fd); unlink(path) }
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        let named = "\(info.st_dev):\(info.st_ino)"
        #expect(Log.standardErrorIsJournal(environment: ["JOURNAL_STREAM": named], descriptor: fd))
        #expect(!Log.standardErrorIsJournal(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino + 1)"], descriptor: fd))
        #expect(!Log.standardErrorIsJournal(environment: [:], descriptor: fd))
        #expect(!Log.standardErrorIsJournal(environment: ["JOURNAL_STREAM": named], descriptor: -1))
    }

    /// Counts in what vpnd and vpn-server say take their number ("1 profile", "2 profiles"),
    /// as status's do (Control's Plural): no message of theirs, nor of the kernel edge whose
    /// errors they pass on, writes a count before "noun(s)" (issue 43: plurals right).
    @Test func noMessageSaysACountWithParenthesizedPlural() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources").standardized
        var found: [String] = []
        for module in ["Daemon", "vpnd", "vpn-server", "Netlink", "ServiceSupport"] {
            let directory = sources.appendingPathComponent(module)
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") && line.contains(/\)[a-z ,]*[a-z]\(s\)/) {
                    found.append("\(module)/\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
        #expect(try String(contentsOf: sources.appendingPathComponent("Daemon/Daemon.swift"), encoding: .utf8).contains("Plural.count(policy.profiles.count, \"profile\")"),
                "the scan reads vpnd's sources")
    }
}
