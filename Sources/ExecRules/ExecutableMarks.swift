import CLinux
import Descriptors
import Glibc
import Policy
import TrustedFiles
import ServiceSupport
import Applying

/// The files the policy's executable lists name, as the file system has them now, and —
/// where fanotify is in force — marked, so that their execs wait for vpnd. A rule is about
/// the file: a listed symbolic link is its target, and every name of the file (hard links)
/// maps back to the listed paths, which is what ExecutableRules decides with.
///
/// Package upgrades replace a program by writing a new file and renaming it over the old
/// one: a new inode, unmarked. So the directories holding listed files are watched
/// (inotify: a rename, creation, removal or mode change there makes vpnd look again at
/// once), and every listed path is looked at again in vpnd's check each second (a path
/// whose directory did not exist yet, a watch lost with its directory). Marks of files no
/// longer listed or replaced are removed (a mark pins its inode). Owned by the event loop.
final class ExecutableMarks {
    struct File: Sendable, Equatable {
        var path: String
        var target: String?
        var identity: ExecutableFile.Identity?
        var script = false
        /// Why the path cannot run under the rule (nothing there, a directory...), or why
        /// it could not be marked.
        var problem: String?
        var marked = false
    }

    private let group: FanotifyGroup?
    private let inspector = SystemExecutableInspector()
    /// A descriptor of each marked file: what its mark is removed through, later.
    private var marked: [ExecutableFile.Identity: DescriptorNumber] = [:]
    /// The marked files' descriptors.
    private var markedFiles = DescriptorTable()
    /// Directories holding listed files (and their targets), watched for replacements.
    let watchDescriptor: FileDescriptor
    private var watches: [String: Int32] = [:]
    /// Listed paths by the file they name now.
    private(set) var names: [ExecutableFile.Identity: [String]] = [:]
    private(set) var files: [File] = []
    private let log: Log

    init(group: FanotifyGroup?, log: Log) throws {
        self.group = group
        self.log = log
        watchDescriptor = try Self.inotify()
    }

    private static func inotify() throws(ApplyError) -> FileDescriptor {
        do { return try FileDescriptor("inotify_init1", returned: inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))) } catch {
            throw ApplyError.system(error, doing: "inotify_init1 (for listed executables)")
        }
    }

    /// Reads the directory events; true if there were any (the caller refreshes).
    func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var any = false
        while read(watchDescriptor.raw, &buffer, buffer.count) > 0 { any = true }
        return any
    }

    /// Looks at every listed path again; marks new files, unmarks those no longer named.
    /// True if what the paths name changed.
    @discardableResult
    func refresh(_ policy: Policy) -> Bool {
        let paths = Set(ExecutableFiles.listings(policy).map(\.path)).sorted()
        var files: [File] = []
        var names: [ExecutableFile.Identity: [String]] = [:]
        var kept: [ExecutableFile.Identity: DescriptorNumber] = [:]
        var directories: Set<String> = []
        for path in paths {
            let found = inspector.inspect(path)
            directories.insert(Self.directory(of: path))
            if let target = found.target { directories.insert(Self.directory(of: target)) }
            var file = File(path: path, target: found.target, identity: found.identity, problem: found.problem)
            if case let .program(script) = found.kind { file.script = script }
            defer { files.append(file) }
            guard file.problem == nil else { continue }
            // The descriptor's file is the one marked and named, whatever the path meant a
            // moment before.
            let opened: (DescriptorNumber, ExecutableFile.Identity)
            do { opened = try openFile(path) } catch {
                file.problem = "cannot be opened: \(error.reason)"
                continue
            }
            let (fd, identity) = opened
            file.identity = identity
            names[identity, default: []].append(path)
            if let group {
                if let existing = kept[identity] ?? marked[identity] {
                    markedFiles.close(fd)
                    kept[identity] = existing
                } else if let failure = group.mark(fd) {
                    markedFiles.close(fd)
                    file.problem = "cannot be marked: \(failure.reason)"
                    continue
                } else {
                    kept[identity] = fd
                }
                file.marked = true
            } else {
                markedFiles.close(fd)
            }
        }
        for (identity, fd) in marked where kept[identity] == nil {
            group?.unmark(fd)
            markedFiles.close(fd)
        }
        marked = kept
        rewatch(directories)
        let changed = files != self.files
        if changed {
            for file in files where !self.files.contains(file) {
                let shown = ExecutableFile.shown(file.path, target: file.target)
                if let problem = file.problem {
                    log.warning("listed executable \(shown) \(problem); its rule matches nothing until that changes")
                } else if let identity = file.identity {
                    log.info("listed executable \(shown): \(group == nil ? "looked up" : "marked") (inode \(identity.inode) on device \(identity.device))")
                }
            }
        }
        self.files = files
        self.names = names
        return changed
    }

    /// `path` opened (into `markedFiles`, for a mark) and the file it names.
    private func openFile(_ path: String) throws(SystemError) -> (DescriptorNumber, ExecutableFile.Identity) {
        let file = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY)
        var info = stat()
        guard fstat(file.raw, &info) == 0 else { throw SystemError("fstat") }
        return (markedFiles.insert(file), ExecutableFile.Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
    }

    /// The listed paths of the file at `path` (the program a process runs, as the process
    /// connector's path names it): its hard links and the symbolic links to it count.
    func names(ofFileAt path: String) -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return names[ExecutableFile.Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))] ?? []
    }

    private func rewatch(_ directories: Set<String>) {
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
        for (directory, watch) in watches where !directories.contains(directory) {
            inotify_rm_watch(watchDescriptor.raw, watch)
            watches[directory] = nil
        }
        // Adding again is cheap, and gives a directory made again (with a new inode) a watch.
        for directory in directories {
            let watch = inotify_add_watch(watchDescriptor.raw, directory, mask)
            watches[directory] = watch >= 0 ? watch : nil
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
