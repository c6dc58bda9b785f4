import Descriptors

/// A failure of the kernel edge or of the daemon's start, as a value until it is logged
/// or shown: what failed and, where a system call did, its SystemError. `description` is
/// the message people read (vpnd's log and stderr, a refused reload).
public enum ApplyError: Error, CustomStringConvertible {
    /// Elements or counters asked of a table before the first apply made it.
    case noTableApplied
    /// `cgroup-parent` names the root cgroup, where vpnd may not make its profiles.
    case cgroupParentIsRoot
    /// The cgroup socket programs could not be made, loaded or their maps created.
    case socketProgramsNotLoaded(underlying: any Error)
    /// Another vpnd holds this network namespace's lock (`pid`: what it wrote there).
    case namespaceHeld(pid: String?, lock: String)
    /// Another vpnd answers on the control socket.
    case controlSocketHeld(path: String)
    /// The kernel has no `feature`, as `operation` found.
    case kernelLacks(operation: String, feature: String)
    /// `operation` was refused, and `needs` says what it would have taken.
    case notPermitted(operation: String, needs: String)
    /// `process` could not keep a capability it needs in vpnd's capability bound.
    case capabilityNotKept(process: String, capability: String)
    /// A system call failed in a step of the start that `doing` names.
    case system(SystemError, doing: String)
    /// An event source `vpnd --oneshot` does not open (it applies and exits).
    case notOpenedByOneshot
    /// A policy lists executables but neither fanotify permission events nor exec events
    /// are open: why each is not (fanotify's nil where it was never tried).
    case executablesUnenforceable(fanotify: (any Error)?, execEvents: any Error)

    public var description: String {
        switch self {
        case .noTableApplied:
            "no table applied yet"
        case .cgroupParentIsRoot:
            "the cgroup parent must be a cgroup below the root (e.g. vpn.slice), not the root itself"
        case let .socketProgramsNotLoaded(underlying):
            "the cgroup socket programs (a member's mark, guard and DNS at its sockets) could not be loaded: \(underlying); "
                + "vpnexec needs Linux 5.14 or later with cgroup BPF, and CAP_BPF at start"
        case let .namespaceHeld(pid, lock):
            "another vpnd\(pid.map { " (pid \($0))" } ?? "") manages this network namespace (lock \(lock))"
        case let .controlSocketHeld(path):
            "another vpnd already listens on \(path)"
        case let .kernelLacks(operation, feature):
            "\(operation): this kernel has no \(feature)"
        case let .notPermitted(operation, needs):
            "\(operation): not permitted (\(needs))"
        case let .capabilityNotKept(process, capability):
            "\(process) could not keep \(capability) (not in vpnd's capability bound)"
        case let .system(error, doing):
            "\(doing): \(error.reason)"
        case .notOpenedByOneshot:
            "not opened by vpnd --oneshot"
        case let .executablesUnenforceable(fanotify, execEvents):
            "bypass.executables and route.executables need fanotify permission events or exec events, and this vpnd has neither ("
                + "\(fanotify.map { "\($0)" } ?? "?"); \(execEvents))"
        }
    }
}
