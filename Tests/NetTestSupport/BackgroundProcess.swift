import Foundation

/// A process a test starts and must stop: killed by pid at cleanup, output kept in files
/// so a failing test can show it.
public final class BackgroundProcess: @unchecked Sendable {
    public let process = Process()
    public let logPath: String
    public var pid: Int32 { process.processIdentifier }

    public init(_ arguments: [String], cleanup: Cleanup, environment: [String: String]? = nil) throws {
        logPath = NSTemporaryDirectory() + "vx-\(uniqueTag()).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.executableURL = URL(fileURLWithPath: try Command.resolve(arguments[0]))
        process.arguments = Array(arguments.dropFirst())
        if let environment { process.environment = environment }
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try Self.withNoSignalsBlocked { try process.run() }
        cleanup.add("stop \(arguments.joined(separator: " "))") { [self] in
            stop()
            try? FileManager.default.removeItem(atPath: logPath)
        }
    }

    public var isRunning: Bool { process.isRunning }

    /// The test runner's threads block most signals (SIGTERM among them) and a spawned
    /// process keeps its spawner's mask across exec: a daemon that does not unblock them
    /// itself (sleep, socat, tcpdump, dnsmasq, a shell loop) ignored stop()'s SIGTERM and was
    /// killed only after its two seconds, in every test. Spawned with nothing blocked, it
    /// ends at once (stop() of `sleep`: 2.02 s before, milliseconds after).
    public static func withNoSignalsBlocked<T>(_ body: () throws -> T) rethrows -> T {
        var none = sigset_t(), saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        return try body()
    }

    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM, then SIGKILL if it is still there after two seconds.
    public func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        if !waitForExit(seconds: 2) {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    public func kill9() {
        guard process.isRunning else { return }
        kill(pid, SIGKILL)
        process.waitUntilExit()
    }

    @discardableResult
    public func waitForExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        return !process.isRunning
    }
}

/// Polls `condition` until it holds or the time is up. Tests wait for states, not for
/// durations; the limit only bounds a failure.
public func eventually(_ what: String, seconds: Double = 10, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    var lastError: Error?
    while Date() < deadline {
        do {
            if try condition() { return }
        } catch {
            lastError = error
        }
        usleep(50_000)
    }
    throw TestEnvironmentError("timed out waiting for \(what)" + (lastError.map { " (last error: \($0))" } ?? ""))
}
