import Descriptors
import Glibc
import Policy

/// A listed executable as this machine's file system has it (vpnctl check, vpnd). Only
/// looks: nothing is opened for longer than reading a script's first two bytes.
public struct SystemExecutableInspector: ExecutableInspector {
    public init() {}

    public func inspect(_ path: String) -> ExecutableFile {
        var link = stat()
        guard lstat(path, &link) == 0 else { return ExecutableFile(kind: .missing(Self.absence(errno))) }
        var target: String?
        if link.st_mode & S_IFMT == S_IFLNK {
            guard let resolved = realpath(path, nil) else {
                return ExecutableFile(kind: .missing("is a symbolic link to nothing (\(Self.linkText(path)))"))
            }
            target = String(cString: resolved)
            free(resolved)
        }
        var info = stat()
        guard stat(path, &info) == 0 else { return ExecutableFile(kind: .missing(Self.absence(errno)), target: target) }
        let identity = ExecutableFile.Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return ExecutableFile(kind: .directory, target: target, identity: identity)
        case S_IFREG: break
        default: return ExecutableFile(kind: .notRegular, target: target, identity: identity)
        }
        if info.st_mode & 0o111 == 0 {
            return ExecutableFile(kind: .notExecutable("is not executable by anyone (mode \(String(info.st_mode & 0o7777, radix: 8)))"), target: target, identity: identity)
        }
        var mount = statvfs()
        if statvfs(path, &mount) == 0, mount.f_flag & Self.noExec != 0 {
            return ExecutableFile(kind: .notExecutable("is on a file system mounted noexec"), target: target, identity: identity)
        }
        return ExecutableFile(kind: .program(script: Self.startsWithShebang(path)), target: target, identity: identity)
    }

    /// ST_NOEXEC, which glibc declares only under _GNU_SOURCE.
    static let noExec: UInt = 8

    static func absence(_ code: Int32) -> String {
        switch code {
        case ENOENT: return "does not exist"
        case ENOTDIR: return "does not exist (a directory on its path is a file)"
        case ELOOP: return "is a loop of symbolic links"
        default: return "cannot be looked at: \(SystemError.reason(of: code))"
        }
    }

    static func linkText(_ path: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink(path, &buffer, 4096)
        guard count >= 0 else { return "?" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "#!": the kernel runs the interpreter it names, and /proc/PID/exe names that.
    static func startsWithShebang(_ path: String) -> Bool {
        guard let file = try? FileDescriptor.open(path, O_RDONLY | O_NONBLOCK) else { return false }
        var bytes: [UInt8] = [0, 0]
        return read(file.raw, &bytes, 2) == 2 && bytes == [UInt8(ascii: "#"), UInt8(ascii: "!")]
    }
}
