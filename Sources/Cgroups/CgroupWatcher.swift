import CLinux
import Glibc

/// Watches the directory that holds the profile cgroups. systemd removes a slice's
/// directory when its last unit stops and makes a new one (with a new id) when the next
/// starts; the daemon re-reads the ids and updates the maps' elements.
public final class CgroupWatcher {
    public let fileDescriptor: Int32
    private let path: String
    private var watch: Int32 = -1

    public init(path: String) throws {
        self.path = path
        fileDescriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fileDescriptor >= 0 else { throw CgroupError("inotify_init1", path: path) }
        rewatch()
    }

    deinit { close(fileDescriptor) }

    /// (Re-)adds the watch, e.g. after the directory itself was removed and made again.
    public func rewatch() {
        if watch >= 0 { return }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
        watch = inotify_add_watch(fileDescriptor, path, mask)
    }

    /// Reads pending events; true if anything happened.
    public func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var changed = false
        while true {
            let count = read(fileDescriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            changed = true
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                if event.mask & UInt32(IN_IGNORED) != 0 { watch = -1 }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
        return changed
    }
}
