import Foundation

/// Runs test-side tools (ip, nft, tcpdump, wireguard-go...). Tests may use them to build
/// topologies and read kernel state back; the product never does.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

public struct CommandError: Error, CustomStringConvertible {
    public var command: [String]
    public var result: CommandResult
    public var description: String {
        "`\(command.joined(separator: " "))` exited \(result.status): \(result.stderr)\(result.stdout)"
    }
}

public enum Command {
    /// Runs to completion; throws unless the exit status is 0.
    @discardableResult
    public static func run(_ arguments: [String], input: String? = nil, environment: [String: String]? = nil) throws -> String {
        let result = try status(arguments, input: input, environment: environment)
        guard result.status == 0 else { throw CommandError(command: arguments, result: result) }
        return result.stdout
    }

    /// Runs to completion and returns whatever happened.
    public static func status(_ arguments: [String], input: String? = nil, environment: [String: String]? = nil) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try resolve(arguments[0]))
        process.arguments = Array(arguments.dropFirst())
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe(), inPipe = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input == nil ? FileHandle.nullDevice : inPipe
        // A command may leave a daemon behind (dnsmasq, podman's conmon): with the runner's
        // mask it would ignore the SIGTERM that stops it.
        try BackgroundProcess.withNoSignalsBlocked { try process.run() }
        if let input {
            inPipe.fileHandleForWriting.write(Data(input.utf8))
            try inPipe.fileHandleForWriting.close()
        }
        // Read both pipes before waiting, so a chatty child cannot block on a full pipe.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus,
                             stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errData, as: UTF8.self))
    }

    public static func resolve(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin"
        for directory in (path + ":/usr/sbin:/sbin:/usr/local/sbin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw TestEnvironmentError("`\(name)` is not installed; run scripts/test (it installs what the tests need)")
    }
}

/// The machine lacks something a test needs: the test fails with this, it never skips.
public struct TestEnvironmentError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

public func requireRoot() throws {
    guard geteuid() == 0 else {
        throw TestEnvironmentError("this test builds network namespaces and needs root; run the suite as root (CI does)")
    }
}

/// A unique short tag per test run, for namespace, interface and cgroup names.
public func uniqueTag() -> String {
    String(UInt32.random(in: 0..<UInt32.max), radix: 36)
}
