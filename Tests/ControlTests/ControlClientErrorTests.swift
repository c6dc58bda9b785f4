import Addresses
import Descriptors
import Glibc
import Launch
import Testing

/// What vpnctl and vpnexec print when vpnd gives no answer they can read, and the one
/// case a command that can do without vpnd tells apart.
@Suite struct ControlClientErrorTests {
    @Test func eachCaseSaysWhyThereIsNoAnswer() throws {
        let path = "/run/vpnexec/vpnd.sock"
        let cases: [(ControlClientError, String)] = [
            (.socket(SystemError("socket", code: EMFILE)), "cannot create a socket: Too many open files"),
            (.notRunning(socketPath: path), "vpnd is not running (nothing listens on /run/vpnexec/vpnd.sock); start it with `systemctl start vpnd` or run `vpnd` as root"),
            (.permissionDenied(socketPath: path), "permission denied on /run/vpnexec/vpnd.sock"),
            (.unreachable(socketPath: path, SystemError("connect", code: EAGAIN)), "cannot reach vpnd at /run/vpnexec/vpnd.sock: Resource temporarily unavailable"),
            (.closedWhileSending(SystemError("send", code: EPIPE)), "vpnd closed the connection: Broken pipe"),
            (.closedWithoutAnswer, "vpnd closed the connection without an answer"),
            (.notUnderstood("no key \"ok\""), "vpnd sent an answer this client does not understand (no key \"ok\"); are vpnd and this command of one version?"),
        ]
        for (error, words) in cases {
            #expect(error.description == words)
            #expect(error.daemonNotRunning == (words.hasPrefix("vpnd is not running")), "\(error)")
        }
        #expect { _ = try UnixSocketAddress(path: "") } throws: { error in
            guard let invalid = error as? UnixSocketAddress.Invalid else { return false }
            return ControlClientError.address(invalid).description == "socket path : empty"
        }
    }

    /// A socket path nobody listens on is "not running", the case vpnctl adds its
    /// alternative to.
    @Test func aSocketNobodyListensOnIsNotRunning() {
        let path = "/tmp/vx-no-vpnd-\(getpid()).sock"
        #expect { _ = try ControlConnection.exchange(Array("{}\n".utf8), socketPath: path) } throws: {
            ($0 as? ControlClientError)?.daemonNotRunning == true && "\($0)".contains("nothing listens on \(path)")
        }
    }
}
