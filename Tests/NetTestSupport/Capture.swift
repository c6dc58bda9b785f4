import Foundation

/// tcpdump on an interface inside a namespace: what really left, as a file to count.
/// Started with --immediate-mode: otherwise tcpdump hands packets over in blocks (up to a
/// second late) and, stopped with SIGTERM, never writes what its last block held, which
/// is exactly what a leak test looks for. Every zero-leak check needs a positive control
/// (the same capture seeing packets it should), see `count(_:)`.
public final class Capture: @unchecked Sendable {
    let process: BackgroundProcess
    public let path: String
    public let filter: String
    private var stopped = false

    public init(on interface: String, in namespace: NetworkNamespace, filter: String, cleanup: Cleanup) throws {
        path = NSTemporaryDirectory() + "vx-\(uniqueTag()).pcap"
        self.filter = filter
        process = try BackgroundProcess(namespace.enter + ["tcpdump", "--immediate-mode", "-i", interface, "-n", "-U", "-w", path, filter], cleanup: cleanup)
        cleanup.add("remove \(path)") { [path] in try? FileManager.default.removeItem(atPath: path) }
        try eventually("tcpdump to listen on \(interface)") {
            process.output.contains("listening on") || !process.isRunning
        }
        guard process.isRunning else { throw TestEnvironmentError("tcpdump failed: \(process.output)") }
    }

    /// Stops the capture and returns the packets it saw, one summary line each.
    public func stop() throws -> [String] {
        try packets()
    }

    /// The captured packets that match a tcpdump filter (all of them for ""), one line each;
    /// the capture is stopped first.
    public func packets(_ filter: String = "") throws -> [String] {
        if !stopped {
            process.stop()
            stopped = true
        }
        let text = try Command.run(["tcpdump", "-r", path, "-n"] + (filter.isEmpty ? [] : [filter]))
        return text.split(separator: "\n").map(String.init)
    }

    public func count(_ filter: String) throws -> Int { try packets(filter).count }

    /// How many captured packets match so far, the capture still running (for waiting on a
    /// control before the change a test makes: `count` would stop it there, and what the
    /// change sends would never be seen). With -U tcpdump writes each packet as it comes; a
    /// last one half written is left out (tcpdump -r says the file is truncated).
    public func countSoFar(_ filter: String) throws -> Int {
        let read = try Command.status(["tcpdump", "-r", path, "-n", filter])
        return read.stdout.split(separator: "\n").count
    }
}
