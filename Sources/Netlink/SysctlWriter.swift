import Descriptors
import Glibc

/// Writes a kernel setting below /proc/sys (no netlink for these): vpnd's, the built-in
/// tunnel's and vpn-server's, with one error that names the setting and the reason.
public enum SysctlWriter {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let value: String
        public let code: Int32
        public var description: String { "cannot write \(value) to /proc/sys/\(path): \(SystemError("write", code: code).reason)" }
    }

    /// `path` is below /proc/sys, e.g. "net/ipv4/conf/all/src_valid_mark".
    public static func write(_ path: String, _ value: String) throws(Failure) {
        do {
            try FileDescriptor.open("/proc/sys/" + path, O_WRONLY).writeAll(Array((value + "\n").utf8), "write")
        } catch {
            throw Failure(path: path, value: value, code: error.code)
        }
    }
}
