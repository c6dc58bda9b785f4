import Foundation

/// Which test process made each namespace or cgroup tree: a run that was killed (SIGKILL, a
/// timeout) runs no cleanup, so the next run removes what a dead process left, and only
/// that (runs side by side keep theirs).
public struct TestOwners: Sendable {
    let directory: String

    public init(_ kind: String) { directory = "/run/vpnexec-tests/" + kind }

    /// Records this process as the owner of `name`.
    public func record(_ name: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try String(getpid()).write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }

    public func forget(_ name: String) {
        try? FileManager.default.removeItem(atPath: directory + "/" + name)
    }

    /// Calls `remove` with each name whose owner is gone, then forgets it.
    public func sweep(_ remove: (String) -> Void) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let pid = (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }),
                  kill(pid, 0) != 0 && errno == ESRCH else { continue }
            remove(name)
            forget(name)
        }
    }
}
