import Cgroups
@testable import Daemon
import Descriptors
import Glibc
import Plan
import Policy
import TunnelFiles

/// A cgroup tree a test sets: ids by path and each process's cgroup by pid. Moves are
/// recorded and the process's cgroup follows; a move into a cgroup that does not exist
/// fails as the kernel's would. Read as facts (the profile cgroups' ids from the tree, the
/// rest from `facts`), it is what vpnd's FactsReader would see.
final class FakeCgroups: CgroupMoving, RuntimeFactsSource {
    var ids: [String: UInt64] = [:]
    var processes: [Int32: String] = [:]
    var facts: RuntimeFacts
    private(set) var moves: [(pid: Int32, path: String)] = []
    /// At each move, before it is recorded: what else had happened by then.
    var onMove: (_ pid: Int32, _ path: String) -> Void = { _, _ in }

    init(ids: [String: UInt64], facts: RuntimeFacts = RuntimeFacts()) {
        self.ids = ids
        self.facts = facts
    }

    func id(of path: String) -> UInt64? { ids[path] }

    func currentCgroup(of pid: Int32) -> String? { processes[pid] }

    func processes(in path: String) -> [Int32] {
        processes.filter { $0.value == path || $0.value.hasPrefix(path + "/") }.keys.sorted()
    }

    func move(_ process: ProcessHandle, to path: String) throws {
        guard ids[path] != nil || path.isEmpty else { throw CgroupError.system(SystemError("move process \(process.pid) into \(path)/cgroup.procs", code: ENOENT)) }
        onMove(process.pid, path)
        moves.append((process.pid, path))
        processes[process.pid] = path
    }

    func place(_ process: ProcessHandle, in path: String) throws -> String {
        try move(process, to: path)
        return path
    }

    func facts(for policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded]) throws -> RuntimeFacts {
        var result = facts
        result.cgroupIDs = [:]
        for path in Planner.cgroups(policy, parent: result.cgroupParent) { result.cgroupIDs[path] = ids[path] }
        return result
    }
}

/// systemd's scopes as a test has them answer: `run` decides, synchronously.
final class FakeScopes: ScopeStarting {
    private(set) var started: [(unit: String, slice: String, pid: Int32)] = []
    var run: (_ unit: String, _ pid: Int32) -> String? = { _, _ in nil }

    func start(unit: String, slice: String, pid: Int32, description: String, done: @escaping (String?) -> Void) {
        started.append((unit, slice, pid))
        done(run(unit, pid))
    }
}
