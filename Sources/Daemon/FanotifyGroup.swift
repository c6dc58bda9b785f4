import CLinux
import Glibc

/// A fanotify group that holds every exec of the files it marks until it answers
/// (FAN_OPEN_EXEC_PERM). Marks are on inodes: every name of a marked file (a hard link, a
/// symbolic link to it) fires, and so does a marked script when it is executed (the kernel
/// opens the script for exec before its interpreter). Closing the group (vpnd exiting or
/// killed) makes the kernel allow every event still waiting.
final class FanotifyGroup: Sendable {
    struct Event: Sendable {
        /// A read-only descriptor of the file being executed; the reader closes it after
        /// answering.
        var file: Int32
        /// The process calling execve (its thread group id), 0 when it is outside vpnd's pid
        /// namespace.
        var pid: Int32
        var isExecPermission: Bool
    }

    let fileDescriptor: Int32

    /// FAN_CLASS_CONTENT needs CAP_SYS_ADMIN: vpnd makes the group before it drops its
    /// capabilities (marks and answers need none). Fails on kernels without
    /// CONFIG_FANOTIFY_ACCESS_PERMISSIONS (EINVAL) or where a system call filter refuses it.
    init() throws {
        fileDescriptor = vx_fanotify_init_exec()
        guard fileDescriptor >= 0 else {
            let code = errno
            switch code {
            case EINVAL: throw ApplyError("fanotify_init: this kernel has no fanotify permission events (CONFIG_FANOTIFY_ACCESS_PERMISSIONS)")
            case EPERM: throw ApplyError("fanotify_init: not permitted (CAP_SYS_ADMIN at start, or a system call filter)")
            case ENOSYS: throw ApplyError("fanotify_init: this kernel has no fanotify")
            default: throw ApplyError("fanotify_init: \(String(cString: strerror(code)))")
            }
        }
    }

    deinit { close(fileDescriptor) }

    /// Marks the inode `file` is open on; nil, or why not.
    func mark(_ file: Int32) -> String? {
        vx_fanotify_mark_exec(fileDescriptor, file, 1) == 0 ? nil : String(cString: strerror(errno))
    }

    func unmark(_ file: Int32) {
        _ = vx_fanotify_mark_exec(fileDescriptor, file, 0)
    }

    /// The events waiting now (none when nothing is; the group never blocks).
    func read() -> [Event] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
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
                    events.append(Event(file: fd, pid: pid, isExecPermission: mask & vx_fan_open_exec_perm() != 0))
                }
            }
        }
        return events
    }

    /// Answers the event of `file`; false if the kernel had no such event waiting (it was
    /// answered already).
    @discardableResult
    func respond(_ file: Int32, allow: Bool) -> Bool {
        vx_fanotify_respond(fileDescriptor, file, allow ? 1 : 0) == 0
    }
}
