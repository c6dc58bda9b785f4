import Control
import Glibc
import Launch

/// Lines on stderr. Under journald each carries a syslog priority prefix ("<3>"), which
/// journald turns into the entry's priority (the journal names the program itself);
/// anywhere else (a terminal, a pipe, a file) each begins with the program's name, as
/// vpnexec's and vpnctl's errors do ("vpnd: ...").
public struct Log: Sendable {
    public enum Level: Int32, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    }

    /// What a pure decision gives the log: a part says what happened, the daemon writes it.
    public struct Line: Hashable, Sendable {
        public var level: Level
        public var text: String

        public init(_ level: Level, _ text: String) { (self.level, self.text) = (level, text) }
    }

    public var minimum: Level
    /// Whether each line starts with its "<N>" priority.
    public var priorityPrefixes: Bool
    /// What begins each line without a priority ("vpnd"); nil: nothing.
    public var program: String?

    public init(minimum: Level = .info, priorityPrefixes: Bool = true, program: String? = nil) {
        self.minimum = minimum
        self.priorityPrefixes = priorityPrefixes
        self.program = program
    }

    /// Whether standard error is journald's stream: systemd names it in JOURNAL_STREAM as
    /// "DEVICE:INODE", and it is ours only while fd 2 is still that file (sd_journal_stream_fd's
    /// rule: a child whose stderr was redirected inherits the variable, not the stream).
    public static func standardErrorIsJournal(environment: [String: String] = ProcessInfoEnvironment.current,
                                             descriptor: Int32 = 2) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"], !stream.isEmpty else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return stream == "\(info.st_dev):\(info.st_ino)"
    }

    /// The text written for `message` at `level`: each of its lines, prefixed or not.
    public func text(_ level: Level, _ message: String) -> String {
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        let prefix = priorityPrefixes ? "<\(level.rawValue)>" : program.map { $0 + ": " } ?? ""
        return lines.map { prefix + $0 + "\n" }.joined()
    }

    public func log(_ level: Level, _ message: String) {
        guard level.rawValue <= minimum.rawValue else { return }
        writeStandardError(text(level, message))
    }

    public func log(_ lines: [Line]) {
        for line in lines { log(line.level, line.text) }
    }

    public func error(_ message: String) { log(.error, message) }
    public func warning(_ message: String) { log(.warning, message) }
    public func notice(_ message: String) { log(.notice, message) }
    public func info(_ message: String) { log(.info, message) }
    public func debug(_ message: String) { log(.debug, message) }
}
