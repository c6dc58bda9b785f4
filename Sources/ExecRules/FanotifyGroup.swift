import CLinux
import Descriptors
import Glibc
import Applying

/// A fanotify group that holds every exec of the files it marks until it answers
/// (FAN_OPEN_EXEC_PERM). Marks are on inodes: every name of a marked file (a hard link, a
/// symbolic link to it) fires, and so does a marked script when it is executed (the kernel
/// opens the script for exec before its interpreter). Closing the group (vpnd exiting or
/// killed) makes the kernel allow every event still waiting.
final class FanotifyGroup: Sendable {
    /// An exec event read from the group. It owns the descriptor the kernel put in it,
    /// which closes with the event (its reader keeps it until it has answered).
    final class Event: Sendable {
        /// A read-only descriptor of the file being executed.
        let file: FileDescriptor
        /// The process calling execve (its thread group id), 0 when it is outside vpnd's pid
        /// namespace.
        let pid: Int32
        let isExecPermission: Bool

        init(file: consuming FileDescriptor, pid: Int32, isExecPermission: Bool) {
            self.file = file
            self.pid = pid
            self.isExecPermission = isExecPermission
        }
    }

    let fileDescriptor: FileDescriptor

    /// FAN_CLASS_CONTENT needs CAP_SYS_ADMIN: vpnd makes the group before it drops its
    /// capabilities (marks and answers need none). Fails on kernels without
    /// CONFIG_FANOTIFY_ACCESS_PERMISSIONS (EINVAL) or where a system call filter refuses it.
    init() throws {
        fileDescriptor = try Self.open()
    }

    private static func open() throws -> FileDescriptor {
        let raw = vx_fanotify_init_exec()
        guard raw >= 0 else {
            let code = errno
            switch code {
            case EINVAL: throw ApplyError.kernelLacks(operation: "fanotify_init", feature: "fanotify permission events (CONFIG_FANOTIFY_ACCESS_PERMISSIONS)")
            case EPERM: throw ApplyError.notPermitted(operation: "fanotify_init", needs: "CAP_SYS_ADMIN at start, or a system call filter")
            case ENOSYS: throw ApplyError.kernelLacks(operation: "fanotify_init", feature: "fanotify")
            default: throw SystemError("fanotify_init", code: code)
            }
        }
        return FileDescriptor(adopting: raw)
    }

    /// Marks the inode `file` is open on; nil, or why not.
    func mark(_ file: DescriptorNumber) -> SystemError? {
        vx_fanotify_mark_exec(fileDescriptor.raw, file.raw, 1) == 0 ? nil : SystemError("fanotify_mark")
    }

    func unmark(_ file: DescriptorNumber) {
        _ = vx_fanotify_mark_exec(fileDescriptor.raw, file.raw, 0)
    }

    /// The events waiting now (none when nothing is; the group never blocks).
    func read() -> [Event] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor.raw, $0.baseAddress, $0.count) }
        guard count > 0 else { return [] }
        var events: [Event] = []
        var offset = 0
        buffer.withUnsafeBytes { bytes in
            var mask: UInt64 = 0
            var fd: Int32 = 0
            var pid: Int32 = 0
            while true {
                let next = vx_fanotify_event(bytes.baseAddress, count, offset, &mask, &fd, &pid)
                guard next > 0 else { break }
                offset = next
                if fd != vx_fan_nofd() {
                    events.append(Event(file: FileDescriptor(adopting: fd), pid: pid, isExecPermission: mask & vx_fan_open_exec_perm() != 0))
                }
            }
        }
        return events
    }

    /// Answers the event of `file`; false if the kernel had no such event waiting (it was
    /// answered already).
    @discardableResult
    func respond(_ file: DescriptorNumber, allow: Bool) -> Bool {
        vx_fanotify_respond(fileDescriptor.raw, file.raw, allow ? 1 : 0) == 0
    }
}
