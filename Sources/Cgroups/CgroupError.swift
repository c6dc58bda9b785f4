import Descriptors

/// A failure to find, make, remove or move into a cgroup, or to hold a process to move:
/// the failed call's SystemError kept until shown; `code` is the errno a caller tells a
/// refusal by (EBUSY: the cgroup takes no processes), 0 where no call failed.
public enum CgroupError: Error, CustomStringConvertible, Sendable {
    case system(SystemError)
    /// pidfd_open found no such process (ESRCH).
    case noProcess(pid: Int32)
    case cannotOpenProcess(pid: Int32, SystemError)
    /// The process exited before or during its move.
    case processExited(pid: Int32)
    case mountInfoUnreadable
    /// No cgroup2 mount in /proc/self/mountinfo.
    case noCgroup2

    public var code: Int32 {
        switch self {
        case let .system(error): error.code
        case .noProcess, .cannotOpenProcess, .processExited, .mountInfoUnreadable, .noCgroup2: 0
        }
    }

    public var description: String {
        switch self {
        case let .system(error): error.description
        case let .noProcess(pid): "no process \(pid)"
        case let .cannotOpenProcess(pid, error): "cannot open process \(pid): \(error.reason)"
        case let .processExited(pid): "process \(pid) exited"
        case .mountInfoUnreadable: "cannot read /proc/self/mountinfo"
        case .noCgroup2: "no cgroup2 file system is mounted (looked in /proc/self/mountinfo); vpnexec needs the unified cgroup hierarchy"
        }
    }
}
