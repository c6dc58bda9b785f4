import CLinux
import Cgroups
import Foundation

/// A network namespace made by a test (`ip netns add`), removed when the test ends.
public final class NetworkNamespace: @unchecked Sendable {
    public let name: String
    public var path: String { "/var/run/netns/\(name)" }

    public init(_ name: String, cleanup: Cleanup) throws {
        try requireRoot()
        self.name = name
        Self.sweepOnce
        try Command.run(["ip", "netns", "add", name])
        try? Self.owners.record(name)
        cleanup.add("delete netns \(name)") { [name] in
            Self.detachSocketPrograms(of: name)
            Self.removeDaemonLock(of: name)
            // Processes still inside would keep the namespace alive; the test killed its own.
            try Command.run(["ip", "netns", "delete", name])
            Self.owners.forget(name)
        }
        try run(["ip", "link", "set", "lo", "up"])
    }

    static let owners = TestOwners("netns")
    static let sweepOnce: Void = owners.sweep { name in
        detachSocketPrograms(of: name)
        removeDaemonLock(of: name)
        _ = try? Command.run(["ip", "netns", "delete", name])
    }

    /// The socket programs a vpnd attached in the namespace outlive it and the namespace
    /// (inert then, as their owner is gone, but attached): detached as `vpnd --cleanup` does.
    static func detachSocketPrograms(of name: String) {
        guard let hierarchy = try? CgroupHierarchy.system(),
              let owner = try? within(name, { try SocketProgramSet.currentOwner() }) else { return }
        for failure in AdoptedSocketPrograms.detachAll(hierarchy: hierarchy, owner: owner) {
            FileHandle.standardError.write(Data("cleanup of netns \(name): \(failure)\n".utf8))
        }
    }

    /// The lock a vpnd took for the namespace (/run/vpnexec/netns-INODE.lock) outlives it.
    static func removeDaemonLock(of name: String) {
        var namespace = stat()
        guard stat("/var/run/netns/\(name)", &namespace) == 0 else { return }
        try? FileManager.default.removeItem(atPath: "/run/vpnexec/netns-\(namespace.st_ino).lock")
    }

    /// The argument prefix that runs a command inside (nsenter keeps /sys and cgroupfs).
    public var enter: [String] { ["nsenter", "--net=\(path)", "--"] }

    @discardableResult
    public func run(_ arguments: [String], input: String? = nil) throws -> String {
        try Command.run(enter + arguments, input: input)
    }

    public func status(_ arguments: [String], input: String? = nil) throws -> CommandResult {
        try Command.status(enter + arguments, input: input)
    }

    /// Runs `body` with the calling thread inside the namespace (setns is per thread);
    /// sockets opened in `body` stay in the namespace afterwards.
    public func within<T>(_ body: () throws -> T) throws -> T { try Self.within(name, body) }

    public static func within<T>(_ name: String, _ body: () throws -> T) throws -> T {
        let path = "/var/run/netns/\(name)"
        let original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let target = open(path, O_RDONLY | O_CLOEXEC)
        guard original >= 0, target >= 0 else { throw TestEnvironmentError("cannot open network namespace \(path)") }
        defer {
            close(target)
            close(original)
        }
        guard vx_setns(target, vx_clone_newnet()) == 0 else { throw TestEnvironmentError("setns into \(name) failed: errno \(errno)") }
        defer { precondition(vx_setns(original, vx_clone_newnet()) == 0, "could not leave test namespace") }
        return try body()
    }

    public func json(_ arguments: [String]) throws -> Any {
        let text = try run(arguments)
        return try JSONSerialization.jsonObject(with: Data(text.utf8))
    }
}
