/// Where vpnd puts processes, behind a protocol so the decisions around a move (requests,
/// exec events) are unit tests with a recording fake: the cgroup tree (CgroupHierarchy on
/// this machine). Both the requests' handler and the exec rules move through it.
public protocol CgroupMoving {
    /// The cgroup's id, nil if it does not exist.
    func id(of path: String) -> UInt64?
    /// The cgroup the process with this pid is in now, relative to the root; nil if none is.
    func currentCgroup(of pid: Int32) -> String?
    /// Moves the process a handle names, never one that took its pid.
    func move(_ process: ProcessHandle, to path: String) throws
    /// Like `move`, into a leaf below where the cgroup takes no processes; where it went.
    @discardableResult
    func place(_ process: ProcessHandle, in path: String) throws -> String
    /// The processes in the cgroup and in every cgroup below it.
    func processes(in path: String) -> [Int32]
}

extension CgroupHierarchy: CgroupMoving {
    public func currentCgroup(of pid: Int32) -> String? { Self.cgroup(ofProcess: pid) }
    public func processes(in path: String) -> [Int32] { processes(in: path, recursive: true) }
}
