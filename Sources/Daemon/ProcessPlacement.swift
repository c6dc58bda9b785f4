import Cgroups
import Plan

/// Where vpnd puts processes, behind protocols so the decisions around a move (requests,
/// exec events) are unit tests with a recording fake: the cgroup tree (CgroupHierarchy on
/// this machine) and systemd's scopes (SystemdScopes).
protocol CgroupMoving {
    /// The cgroup's id, nil if it does not exist.
    func id(of path: String) -> UInt64?
    /// The cgroup the process with this pid is in now, relative to the root; nil if none is.
    func currentCgroup(of pid: Int32) -> String?
    /// Moves the process a handle names, never one that took its pid.
    func move(_ process: ProcessHandle, to path: String) throws
    /// Like `move`, into a leaf below where the cgroup takes no processes; where it went.
    @discardableResult
    func place(_ process: ProcessHandle, in path: String) throws -> String
}

extension CgroupHierarchy: CgroupMoving {
    func currentCgroup(of pid: Int32) -> String? { Self.cgroup(ofProcess: pid) }
}

/// A transient scope asked of systemd; `done` gets nil once it runs, or why it does not.
protocol ScopeStarting: AnyObject {
    func start(unit: String, slice: String, pid: Int32, description: String, done: @escaping (String?) -> Void)
}

extension SystemdScopes: ScopeStarting {}

extension Reconciler {
    /// Before a move: every cgroup vpnd keeps exists and its id is in the applied maps. A
    /// cgroup systemd or an admin removed (and maybe made again, with a new id) is brought
    /// back and its id applied (the reconciler's prepare hook makes the cgroups).
    func prepareMove(cgroups: any CgroupMoving, parent: String) throws {
        let paths = Planner.cgroups(policy, parent: parent)
        if paths.contains(where: { cgroups.id(of: $0) == nil || cgroups.id(of: $0) != appliedFacts?.cgroupIDs[$0] }) {
            try applyPolicy()
        }
    }
}
