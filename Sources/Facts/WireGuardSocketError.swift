import Descriptors

/// Why a userspace WireGuard's `wg` socket gave no transport (WireGuardSocketReader),
/// kept as the failed call's SystemError until status shows it.
enum WireGuardSocketError: Error, CustomStringConvertible {
    /// The path is no Unix socket address (too long).
    case address(any Error)
    /// A file nobody listens on: its daemon died without removing it (connect's ECONNREFUSED
    /// or ENOENT). Not a failure to show: the interface has no socket.
    case nobodyListens(SystemError)
    case system(SystemError)
    case answerTooLong(bytes: Int)
    case closedBeforeAnswering

    var description: String {
        switch self {
        case let .address(error): "\(error)"
        case let .nobodyListens(error), let .system(error): error.description
        case let .answerTooLong(bytes): "answer longer than \(bytes) bytes"
        case .closedBeforeAnswering: "closed before answering"
        }
    }
}
