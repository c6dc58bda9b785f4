import Glibc

/// An open file descriptor with one owner: it closes when its owner is gone (or when it is
/// consumed by `close()`), and cannot be copied, so it cannot be closed twice or outlive
/// its owner by accident. The raw number is lent out for one system call at a time.
public struct FileDescriptor: ~Copyable, Sendable {
    public let raw: Int32

    /// Takes ownership of a descriptor a system call returned (>= 0).
    public init(adopting raw: Int32) {
        precondition(raw >= 0, "adopting an invalid descriptor")
        self.raw = raw
    }

    /// Adopts what a system call returned, or throws its errno.
    public init(_ operation: @autoclosure () -> String, returned raw: Int32) throws(SystemError) {
        guard raw >= 0 else {
            let code = errno
            throw SystemError(operation(), code: code)
        }
        self.raw = raw
    }

    deinit { Glibc.close(raw) }

    /// Closes now.
    public consuming func close() {}

    /// Hands the descriptor to an owner that is not this type (a C API that closes it).
    public consuming func release() -> Int32 {
        let raw = raw
        discard self
        return raw
    }

    /// In a child just forked: closes every descriptor above stderr it inherited but
    /// `kept` (the parent's owners are not this process's).
    public static func closeInherited(keeping kept: Int32, below limit: Int32 = 4096) {
        for raw in 3..<limit where raw != kept { Glibc.close(raw) }
    }

    // MARK: opening

    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) -> FileDescriptor {
        try FileDescriptor("open \(path)", returned: Glibc.open(path, flags | O_CLOEXEC, mode))
    }

    public static func open(_ name: String, in directory: borrowing FileDescriptor, _ flags: Int32, mode: mode_t = 0, describedAs path: String? = nil) throws(SystemError) -> FileDescriptor {
        try FileDescriptor("open \(path ?? name)", returned: openat(directory.raw, name, flags | O_CLOEXEC, mode))
    }

    /// A new socket (close-on-exec).
    public static func socket(_ domain: Int32, _ type: Int32, _ protocolNumber: Int32 = 0) throws(SystemError) -> FileDescriptor {
        try FileDescriptor("socket", returned: Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), protocolNumber))
    }

    // MARK: reading and writing whole (small) buffers

    /// Writes all of `bytes` in one write(2) (cgroup, /proc and /sys files take one write).
    public func writeAll(_ bytes: [UInt8], _ operation: @autoclosure () -> String) throws(SystemError) {
        guard Glibc.write(raw, bytes, bytes.count) == bytes.count else {
            let code = errno
            throw SystemError(operation(), code: code)
        }
    }

    /// Everything until the end of the file.
    public func readToEnd() -> [UInt8] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = Glibc.read(raw, &buffer, buffer.count)
            guard count > 0 else { break }
            data += buffer[0..<count]
        }
        return data
    }
}
