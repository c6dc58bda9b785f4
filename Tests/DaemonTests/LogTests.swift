import Foundation
import ServiceSupport
import Testing

/// vpnd's log: "<N>" priorities for journald only; a terminal, a pipe or a file gets the
/// lines as a person reads them (issue 43: "<6>" on a terminal).
@Suite struct LogTests {
    @Test func priorityPrefixesOnlyWhenAsked() {
        #expect(Log(priorityPrefixes: true).text(.warning, "one\ntwo") == "<4>one\n<4>two\n")
        #expect(Log(priorityPrefixes: false).text(.warning, "one\ntwo") == "one\ntwo\n")
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
}
