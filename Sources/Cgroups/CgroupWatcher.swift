import CLinux
import Descriptors
import Glibc

/// Watches the directories where profile cgroups (and the parent holding them) live: the
/// parent and each of its ancestors up to the root. systemd removes a slice's directory
/// when its last unit stops and makes a new one (with a new id) when the next starts; a
/// removed directory's watch is gone for good, so every path is watched again by name
/// after each event and on the daemon's periodic tick (a directory made again gets a new
/// watch; one that is still there keeps its own, inotify hands back the same descriptor).
/// The paths are the caller's, given at each rewatch (the users' trees grow).
public final class CgroupWatcher {
    private let inotify: FileDescriptor
    /// For poll().
    public var fileDescriptor: DescriptorNumber { inotify.number }
    /// Watch descriptors handed out so far (the kernel does not reuse them soon).
    private var watched: Set<Int32> = []

    /// Watching `paths`.
    public init(paths: [String]) throws {
        do { inotify = try FileDescriptor("inotify_init1", returned: inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))) } catch { throw CgroupError.system(error) }
        rewatch(paths)
    }

    /// (Re-)adds a watch on each of `paths`; one that does not exist (yet) is skipped until next time.
    /// True if a directory got its first watch: what was made inside it before the watch
    /// (`mkdir -p`, systemd making a user's tree) sent no event, so the caller reads again.
    @discardableResult
    public func rewatch(_ paths: [String]) -> Bool {
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
        var added = false
        for path in paths {
            let watch = inotify_add_watch(inotify.raw, path, mask)
            if watch >= 0, watched.insert(watch).inserted { added = true }
        }
        return added
    }

    /// Reads pending events; true if anything happened.
    public func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var changed = false
        while read(inotify.raw, &buffer, buffer.count) > 0 { changed = true }
        return changed
    }
}
