import Control
import Glibc

/// Lines on stderr with a syslog priority prefix ("<3>"), which journald turns into the
/// entry's priority when vpnd runs under systemd, and which stays readable in a terminal.
public struct Log: Sendable {
    public enum Level: Int32, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    }

    public var minimum: Level

    public init(minimum: Level = .info) {
        self.minimum = minimum
    }

    public func log(_ level: Level, _ message: String) {
        guard level.rawValue <= minimum.rawValue else { return }
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        let text = lines.map { "<\(level.rawValue)>\($0)\n" }.joined()
        writeStandardError(text)
    }

    public func error(_ message: String) { log(.error, message) }
    public func warning(_ message: String) { log(.warning, message) }
    public func notice(_ message: String) { log(.notice, message) }
    public func info(_ message: String) { log(.info, message) }
    public func debug(_ message: String) { log(.debug, message) }
}
