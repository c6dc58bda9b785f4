import CLinux
import Descriptors
import Glibc

/// A process held by a pidfd: it names exactly one process for as long as we hold it, so
/// "is it still alive?" after an action proves the pid still meant that process.
public final class ProcessHandle {
    public let pid: Int32
    private let fd: FileDescriptor

    public init(pid: Int32, pidfd: consuming FileDescriptor) {
        self.pid = pid
        fd = pidfd
    }

    /// Takes a pidfd somebody handed us (it is dup'ed; the caller keeps its own) if it
    /// names process `pid`, whose real uid is `uid`, alive after both were read: then the
    /// uid read was that process's, and the pid cannot have been reused in between.
    public static func verify(pidfd: DescriptorNumber, pid: Int32, uid: UInt32) -> Result<ProcessHandle, PidfdMismatch> {
        guard let info = CgroupHierarchy.readFile("/proc/self/fdinfo/\(pidfd)"),
              let line = info.split(separator: "\n").first(where: { $0.hasPrefix("Pid:") }),
              let named = Int32(line.dropFirst(4).trimmingCharacters(in: " \t")) else {
            return .failure(.notAPidfd)
        }
        guard named == pid else {
            return .failure(named < 0 ? .exited : .otherPid(named, connecting: pid))
        }
        let own: FileDescriptor
        do { own = try FileDescriptor("duplicate", returned: fcntl(pidfd.raw, F_DUPFD_CLOEXEC, 3)) } catch {
            return .failure(.notDuplicated(error))
        }
        let process = ProcessHandle(pid: pid, pidfd: own)
        let owner = process.realUID()
        guard process.isAlive else { return .failure(.exited) }
        guard owner == uid else {
            return .failure(.otherUID(pid: pid, uid: owner, connecting: uid))
        }
        return .success(process)
    }

    public static func open(pid: Int32) throws -> ProcessHandle {
        do {
            return ProcessHandle(pid: pid, pidfd: try FileDescriptor("open process \(pid)", returned: vx_pidfd_open(pid)))
        } catch {
            throw error.code == ESRCH ? CgroupError.noProcess(pid: pid) : .cannotOpenProcess(pid: pid, error)
        }
    }

    /// Signal 0 checks existence only; EPERM (another user's process, and vpnd keeps no
    /// CAP_KILL) still means it exists.
    public var isAlive: Bool {
        vx_pidfd_send_signal(fd.raw, 0) == 0 || errno == EPERM
    }

    /// Real uid from /proc/PID/status (meaningful only while isAlive holds afterwards).
    public func realUID() -> UInt32? { Self.realUID(of: pid) }

    /// Real uid of whatever process has the pid now.
    public static func realUID(of pid: Int32) -> UInt32? {
        guard let status = CgroupHierarchy.readFile("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap { UInt32($0) }
        }
        return nil
    }

    public func commandName() -> String {
        (CgroupHierarchy.readFile("/proc/\(pid)/comm") ?? "?").trimmingTrailingNewline()
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> Substring {
        var copy = self
        while let first = copy.first, set.contains(first) { copy.removeFirst() }
        while let last = copy.last, set.contains(last) { copy.removeLast() }
        return copy
    }
}

extension String {
    public func trimmingTrailingNewline() -> String {
        var copy = self
        while copy.last == "\n" { copy.removeLast() }
        return copy
    }
}

extension CgroupHierarchy {
    /// Moves the process a handle names, never another that reused its pid: it must be
    /// alive before the write and still after it (a pid is not reused while its process
    /// exists); if it exited in between, the write is undone.
    public func move(_ process: ProcessHandle, to relative: String) throws {
        guard process.isAlive else { throw CgroupError.processExited(pid: process.pid) }
        let previous = Self.cgroup(ofProcess: process.pid)
        try move(pid: process.pid, to: relative)
        guard process.isAlive else {
            if let previous { try? move(pid: process.pid, to: previous) }
            throw CgroupError.processExited(pid: process.pid)
        }
    }
}

extension CgroupHierarchy {
    /// The leaf a placed process goes into where its cgroup takes none (see `place`).
    public static let placedLeaf = "vpnd-placed"

    /// Moves the process into `relative`, or — where the kernel refuses processes there
    /// because controllers are enabled for its children (EBUSY: systemd enables them in a
    /// slice whose units account for memory or tasks) — into the leaf `relative/vpnd-placed`,
    /// made if missing. Membership is by ancestor, so the leaf is as much the profile's.
    /// Returns the cgroup the process went into.
    @discardableResult
    public func place(_ process: ProcessHandle, in relative: String) throws -> String {
        do {
            try move(process, to: relative)
            return relative
        } catch let error as CgroupError where error.code == EBUSY {
            let leaf = relative + "/" + Self.placedLeaf
            if mkdir(absolute(leaf), 0o755) != 0 && errno != EEXIST { throw CgroupError.system(SystemError("create cgroup \(absolute(leaf))")) }
            try move(process, to: leaf)
            return leaf
        }
    }
}

