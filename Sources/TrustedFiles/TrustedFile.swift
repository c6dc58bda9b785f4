import Descriptors
import Glibc

/// A file or directory that root must not trust, and why.
public struct TrustedFileError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var reason: String

    public var description: String { "\(path): \(reason)" }

    /// Said after naming `file`: the reason alone when it is about the file itself, else
    /// with the directory on the way to it that it is about.
    public func said(of file: String) -> String {
        path == TrustedDirectory.absolute(file) ? reason : description
    }
}

/// Files that decide who may route where (policies) or hold keys (wg-quick files), read
/// the way sshd's StrictModes would, without a window between checking and reading: the
/// path is walked from "/" one component at a time with openat and O_NOFOLLOW (a symbolic
/// link anywhere is refused, never followed), every directory on the way is checked on its
/// own descriptor (owned by root, not writable by group or others unless sticky, as /tmp),
/// then the file is opened once, checked with fstat on that descriptor (a regular file
/// owned by root, not writable by group or others; a file holding a key not readable by
/// them either) and read from the same descriptor, up to a size limit.
public final class TrustedDirectory {
    /// O_PATH (glibc defines it only under _GNU_SOURCE): a directory to walk through, not read.
    static let pathOnly: Int32 = 0o10000000

    public let path: String
    private let fd: FileDescriptor

    /// Opens `path` (relative paths are taken from the working directory).
    public init(_ path: String) throws(TrustedFileError) {
        let absolute = Self.absolute(path)
        self.path = absolute
        var current: FileDescriptor
        do { current = try .open("/", O_RDONLY | O_DIRECTORY) } catch {
            throw TrustedFileError(path: "/", reason: "cannot open: \(error.reason)")
        }
        var walked = ""
        try Self.checkDirectory(current, path: "/")
        let components = absolute.split(separator: "/").map(String.init)
        for (index, component) in components.enumerated() {
            walked += "/" + component
            let last = index == components.count - 1
            let next = openat(current.raw, component, (last ? O_RDONLY : Self.pathOnly) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else { throw Self.openFailure(current, component, path: walked, wanted: "a directory") }
            current = FileDescriptor(adopting: next)
            try Self.checkDirectory(current, path: walked)
        }
        fd = current
    }

    /// Names of the entries `include` takes, sorted.
    public func entries(where include: (String) -> Bool) -> [String] {
        let copy = fcntl(fd.raw, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0, let handle = fdopendir(copy) else { return [] }
        defer { closedir(handle) }
        rewinddir(handle)
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if include(name) { names.append(name) }
        }
        return names.sorted()
    }

    /// Reads the file `name` in this directory; `holdsSecret` also refuses group or other
    /// read access.
    public func read(_ name: String, holdsSecret: Bool = false, limit: Int = 1 << 20) throws(TrustedFileError) -> String {
        let path = (self.path == "/" ? "" : self.path) + "/" + name
        let opened = openat(fd.raw, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard opened >= 0 else { throw Self.openFailure(fd, name, path: path, wanted: "a file") }
        let file = FileDescriptor(adopting: opened)
        var info = stat()
        guard fstat(file.raw, &info) == 0 else { throw TrustedFileError(path: path, reason: SystemError("cannot stat").description) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw TrustedFileError(path: path, reason: "is not a regular file") }
        if let problem = Self.ownershipProblem(info, kind: "file") { throw TrustedFileError(path: path, reason: problem) }
        if holdsSecret && info.st_mode & (S_IRGRP | S_IROTH) != 0 {
            throw TrustedFileError(path: path, reason: "is readable by group or others (mode \(Self.mode(info))) and holds a private key; make it 0600 (chmod go-rw)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = retryingInterrupted { Glibc.read(file.raw, &buffer, buffer.count) }
            guard count >= 0 else { throw TrustedFileError(path: path, reason: SystemError("cannot read").description) }
            if count == 0 { break }
            bytes += buffer[0..<count]
            guard bytes.count <= limit else { throw TrustedFileError(path: path, reason: "is larger than \(limit) bytes") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: checks

    static func checkDirectory(_ fd: borrowing FileDescriptor, path: String) throws(TrustedFileError) {
        var info = stat()
        guard fstat(fd.raw, &info) == 0 else { throw TrustedFileError(path: path, reason: SystemError("cannot stat").description) }
        if let problem = ownershipProblem(info, kind: "directory") { throw TrustedFileError(path: path, reason: problem) }
    }

    /// Why root should not trust what `info` describes, or nil. A sticky directory (like
    /// /tmp) may be writable by others: they cannot rename or remove root's entries in it.
    static func ownershipProblem(_ info: stat, kind: String) -> String? {
        if info.st_uid != 0 {
            return "the \(kind) is owned by uid \(info.st_uid), not root; refusing what others could change"
        }
        let sticky = kind == "directory" && info.st_mode & S_ISVTX != 0
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 && !sticky {
            return "the \(kind) is writable by group or others (mode \(mode(info))); refusing what others could change (chmod go-w)"
        }
        return nil
    }

    /// Why `component` could not be opened as `wanted`: a link is named as such.
    static func openFailure(_ directory: borrowing FileDescriptor, _ component: String, path: String, wanted: String) -> TrustedFileError {
        let code = errno
        var info = stat()
        if fstatat(directory.raw, component, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFLNK {
            return TrustedFileError(path: path, reason: "is a symbolic link; links are not followed (one could be pointed elsewhere after the check): name the real path")
        }
        if code == ENOTDIR || (code == ELOOP && wanted == "a directory") {
            return TrustedFileError(path: path, reason: "is not \(wanted)")
        }
        return TrustedFileError(path: path, reason: SystemError.reason(of: code))
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return "/" + path }
        let cwd = String(cString: buffer)
        return (cwd == "/" ? "" : cwd) + "/" + path
    }

    static func mode(_ info: stat) -> String { "0" + String(info.st_mode & 0o7777, radix: 8) }

}

public enum TrustedFile {
    /// Reads one file as described at `TrustedDirectory`.
    public static func read(_ path: String, holdsSecret: Bool = false, limit: Int = 1 << 20) throws(TrustedFileError) -> String {
        let (directory, name) = try open(path)
        return try directory.read(name, holdsSecret: holdsSecret, limit: limit)
    }

    /// The checked directory a file path names, and the file's name in it.
    public static func open(_ path: String) throws(TrustedFileError) -> (TrustedDirectory, String) {
        let absolute = TrustedDirectory.absolute(path)
        guard let slash = absolute.lastIndex(of: "/"), absolute.index(after: slash) < absolute.endIndex else {
            throw TrustedFileError(path: path, reason: "is not a file path")
        }
        return (try TrustedDirectory(slash == absolute.startIndex ? "/" : String(absolute[..<slash])),
                String(absolute[absolute.index(after: slash)...]))
    }
}
