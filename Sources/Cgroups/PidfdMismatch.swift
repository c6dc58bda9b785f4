import Descriptors

/// Why a pidfd a client sent along is not the connecting process's (ProcessHandle.verify):
/// the words follow "the pidfd sent with the request".
public enum PidfdMismatch: Error, CustomStringConvertible, Equatable {
    case notAPidfd
    /// The process it names exited (before or while it was looked at).
    case exited
    case otherPid(Int32, connecting: Int32)
    case notDuplicated(SystemError)
    /// The process's real uid (nil: unreadable) is not the connecting uid.
    case otherUID(pid: Int32, uid: UInt32?, connecting: UInt32)

    public var description: String {
        switch self {
        case .notAPidfd: "is not a pidfd"
        case .exited: "names a process that has exited"
        case let .otherPid(named, pid): "names pid \(named), not the connecting pid \(pid)"
        case let .notDuplicated(error): "cannot be duplicated: \(error.reason)"
        case let .otherUID(pid, uid, connecting): "names pid \(pid) of uid \(uid.map(String.init) ?? "?"), not the connecting uid \(connecting)"
        }
    }
}
