import CLinux
import Descriptors
import Glibc

/// The cgroup v2 tree as the daemon uses it: cgroups are named by their path relative to
/// the hierarchy's root ("vpn.slice/vpn-work.slice"); nftables knows them by id (the
/// directory's inode) and level (its depth), which is what `socket cgroupv2 level N`
/// compares against.
public struct CgroupHierarchy: Sendable {
    public let mountPoint: String

    public init(mountPoint: String) {
        self.mountPoint = mountPoint
    }

    /// The hierarchy of this machine, found from /proc/self/mountinfo.
    public static func system() throws -> CgroupHierarchy {
        guard let text = readFile("/proc/self/mountinfo") else {
            throw CgroupError.mountInfoUnreadable
        }
        // A mount listed there may be hidden by a later one on a parent path: keep the
        // first candidate that really is cgroup2 when looked at.
        for mount in CgroupMount.candidates(inMountInfo: text) {
            if vx_is_cgroup2(mount) != 0 { return CgroupHierarchy(mountPoint: mount) }
        }
        throw CgroupError.noCgroup2
    }

    public func absolute(_ relative: String) -> String {
        relative.isEmpty ? mountPoint : mountPoint + "/" + relative
    }

    /// The cgroup id, or nil if the directory does not exist.
    public func id(of relative: String) -> UInt64? {
        var info = stat()
        guard stat(absolute(relative), &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return UInt64(info.st_ino)
    }

    /// Creates the cgroup and its missing parents (mkdir -p); returns its id.
    @discardableResult
    public func create(_ relative: String) throws -> UInt64 {
        var path = mountPoint
        for component in relative.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0 && errno != EEXIST {
                throw CgroupError.system(SystemError("create cgroup \(path)"))
            }
        }
        guard let id = id(of: relative) else { throw CgroupError.system(SystemError("create cgroup \(path)", code: ENOENT)) }
        return id
    }

    /// Removes an empty cgroup (rmdir); a cgroup with processes stays.
    public func remove(_ relative: String) throws {
        guard rmdir(absolute(relative)) == 0 || errno == ENOENT else {
            throw CgroupError.system(SystemError("remove cgroup \(absolute(relative))"))
        }
    }

    /// Writes a pid into cgroup.procs: the whole process (all threads) moves.
    public func move(pid: Int32, to relative: String) throws {
        let path = absolute(relative) + "/cgroup.procs"
        do {
            try FileDescriptor.open(path, O_WRONLY).writeAll(Array(String(pid).utf8), "move process \(pid) into \(path)")
        } catch {
            throw CgroupError.system(error)
        }
    }

    /// Processes in the cgroup and, if `recursive`, in every cgroup below it.
    public func processes(in relative: String, recursive: Bool = true) -> [Int32] {
        var pids = (Self.readFile(absolute(relative) + "/cgroup.procs") ?? "")
            .split(separator: "\n").compactMap { Int32($0) }
        if recursive {
            for child in children(of: relative) {
                pids += processes(in: relative + "/" + child, recursive: true)
            }
        }
        return pids
    }

    public func children(of relative: String) -> [String] {
        Directory.entries(of: absolute(relative)).filter(\.isDirectory).map(\.name).sorted()
    }

    /// The cgroup v2 path of a process relative to the root, from /proc/PID/cgroup.
    public static func cgroup(ofProcess pid: Int32) -> String? {
        guard let text = readFile("/proc/\(pid)/cgroup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3).drop { $0 == "/" })
        }
        return nil
    }

    /// A whole (small) file as text: cgroup and /proc files.
    public static func readFile(_ path: String) -> String? {
        guard let file = try? FileDescriptor.open(path, O_RDONLY) else { return nil }
        return String(decoding: file.readToEnd(), as: UTF8.self)
    }
}
