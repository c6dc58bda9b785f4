import Descriptors
import Glibc

/// Writes a kernel setting below /proc/sys (no netlink for these): vpnd's, the built-in
/// tunnel's and vpn-server's. A refusal is the write's errno, its operation naming the
/// setting and the value.
public enum SysctlWriter {
    /// `path` is below /proc/sys, e.g. "net/ipv4/conf/all/src_valid_mark".
    public static func write(_ path: String, _ value: String) throws(SystemError) {
        do {
            try FileDescriptor.open("/proc/sys/" + path, O_WRONLY).writeAll(Array((value + "\n").utf8), "write")
        } catch {
            throw SystemError("cannot write \(value) to /proc/sys/\(path)", code: error.code)
        }
    }
}
