import Foundation

/// A TCP and UDP service on the server's service addresses that answers every client with
/// the source address it saw, and logs one line per connection or datagram ("tcp ADDR").
public final class Services: @unchecked Sendable {
    public let port: Int
    public let logPath: String

    convenience init(topology: Topology, port: Int, cleanup: Cleanup) throws {
        try self.init(in: topology.server, addresses: [Topology.service4, Topology.service6], port: port, cleanup: cleanup)
    }

    /// The same service on any addresses of any namespace (e.g. a tunnel's own address).
    public init(in namespace: NetworkNamespace, addresses: [String], port: Int, cleanup: Cleanup) throws {
        self.port = port
        logPath = NSTemporaryDirectory() + "vx-seen-\(uniqueTag())-\(port).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        cleanup.add("remove \(logPath)") { try? FileManager.default.removeItem(atPath: self.logPath) }
        let script = try PythonScript.write(PythonScript.reporter, cleanup: cleanup)
        let process = try BackgroundProcess(namespace.enter + ["python3", script, logPath, String(port)] + addresses, cleanup: cleanup)
        // Each address's own sockets, TCP and UDP: another service of the namespace may
        // hold the same port on other addresses already (the scenario's, on port 8080).
        let sockets = addresses.map { $0.contains(":") ? "[\($0)]:\(port)" : "\($0):\(port)" }
        try eventually("the reporting service to listen on \(sockets.joined(separator: ", "))") {
            let (tcp, udp) = (try namespace.run(["ss", "-ltnH"]), try namespace.run(["ss", "-lunH"]))
            return sockets.allSatisfy { tcp.contains($0) && udp.contains($0) } || !process.isRunning
        }
        guard process.isRunning else { throw TestEnvironmentError("reporting service failed: \(process.output)") }
    }

    /// Sources seen so far, one per connection or datagram, with the protocol.
    public func seen() -> [String] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    public func count(_ line: String) -> Int { seen().filter { $0 == line }.count }
}

/// The small Python programs in scripts/lib (python3 is installed by the test command):
/// the far end that reports what it saw, and a stand-in for an application. They are
/// copied to a world-readable place, because members run as unprivileged test users.
public enum PythonScript {
    public static var reporter: String { "reporter.py" }
    public static var probe: String { "probe.py" }
    public static var wireGuardAttack: String { "wgattack.py" }
    public static var bulk: String { "bulk.py" }

    public static func write(_ name: String, cleanup: Cleanup) throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/lib/\(name)").standardized.path
        let text = try String(contentsOfFile: source, encoding: .utf8)
        let path = NSTemporaryDirectory() + "vx-\(uniqueTag())-\(name)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        cleanup.add("remove \(path)") { try? FileManager.default.removeItem(atPath: path) }
        return path
    }
}
