import Addresses
import Descriptors

/// Why a client (vpnctl, vpnexec) got no answer from vpnd it could read: the failed
/// call's SystemError kept, the words made where the client prints them.
public enum ControlClientError: Error, CustomStringConvertible, Sendable {
    case socket(SystemError)
    case address(UnixSocketAddress.Invalid)
    /// Nothing listens on the socket (ENOENT, ECONNREFUSED).
    case notRunning(socketPath: String)
    /// connect's EACCES.
    case permissionDenied(socketPath: String)
    case unreachable(socketPath: String, SystemError)
    case closedWhileSending(SystemError)
    case closedWithoutAnswer
    /// An answer this client cannot read, and why (a decoding error's words).
    case notUnderstood(String)

    /// Nothing listens on the socket: a command that can do without vpnd says how.
    public var daemonNotRunning: Bool {
        if case .notRunning = self { true } else { false }
    }

    public var description: String {
        switch self {
        case let .socket(error): "cannot create a socket: \(error.reason)"
        case let .address(invalid): invalid.description
        case let .notRunning(path): "vpnd is not running (nothing listens on \(path)); start it with `systemctl start vpnd` or run `vpnd` as root"
        case let .permissionDenied(path): "permission denied on \(path)"
        case let .unreachable(path, error): "cannot reach vpnd at \(path): \(error.reason)"
        case let .closedWhileSending(error): "vpnd closed the connection: \(error.reason)"
        case .closedWithoutAnswer: "vpnd closed the connection without an answer"
        case let .notUnderstood(why): "vpnd sent an answer this client does not understand (\(why)); are vpnd and this command of one version?"
        }
    }
}
