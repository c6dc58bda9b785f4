import Foundation

/// tcpdump on an interface inside a namespace: what really left, as a file to count.
public final class Capture: @unchecked Sendable {
    let process: BackgroundProcess
    public let path: String
    public let filter: String

    public init(on interface: String, in namespace: NetworkNamespace, filter: String, cleanup: Cleanup) throws {
        path = NSTemporaryDirectory() + "vx-\(uniqueTag()).pcap"
        self.filter = filter
        process = try BackgroundProcess(namespace.enter + ["tcpdump", "-i", interface, "-n", "-U", "-w", path, filter], cleanup: cleanup)
        cleanup.add("remove \(path)") { [path] in try? FileManager.default.removeItem(atPath: path) }
        try eventually("tcpdump to listen on \(interface)") {
            process.output.contains("listening on") || !process.isRunning
        }
        guard process.isRunning else { throw TestEnvironmentError("tcpdump failed: \(process.output)") }
    }

    /// Stops the capture and returns the packets it saw, one summary line each.
    public func stop() throws -> [String] {
        process.stop()
        let text = try Command.run(["tcpdump", "-r", path, "-n"])
        return text.split(separator: "\n").map(String.init)
    }
}
