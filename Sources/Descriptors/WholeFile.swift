import Glibc

/// Small files read and written whole, for the commands (a launcher, a metrics file, a
/// desktop entry). A failure is a SystemError whose operation is the path the caller
/// named, so that it reads "PATH: No such file or directory", never a library's dump.
public enum WholeFile {
    /// The file's bytes, up to `limit` (a directory is EISDIR, more than the limit EFBIG).
    public static func read(_ path: String, limit: Int = 16 << 20) throws(SystemError) -> [UInt8] {
        let file = try FileDescriptor(path, returned: open(path, O_RDONLY | O_CLOEXEC))
        var info = stat()
        guard fstat(file.raw, &info) == 0 else { throw SystemError(path) }
        guard info.st_mode & S_IFMT != S_IFDIR else { throw SystemError(path, code: EISDIR) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = retryingInterrupted { Glibc.read(file.raw, &buffer, buffer.count) }
            guard count >= 0 else { throw SystemError(path) }
            guard count > 0 else { return bytes }
            guard bytes.count + count <= limit else { throw SystemError(path, code: EFBIG) }
            bytes += buffer[0..<count]
        }
    }

    /// Puts `bytes` at `path` whole: written to a new file beside it, then renamed over it,
    /// so a reader (node_exporter's textfile collector, a desktop) sees the old file or the
    /// new one, never half of one. `mode` is narrowed by the umask, as open(2) does.
    public static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o644) throws(SystemError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty else { throw SystemError(path, code: EISDIR) }
        let temporary = "\(directory == "/" ? "" : directory)/.\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let file = try FileDescriptor(path, returned: open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode))
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { chunk in retryingInterrupted { write(file.raw, chunk.baseAddress, chunk.count) } }
            guard count > 0 else {
                let code = count < 0 ? errno : EIO
                unlink(temporary)
                throw SystemError(path, code: code)
            }
            written += count
        }
        file.close()
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw SystemError(path, code: code)
        }
    }

    /// `mkdir -p`: every missing directory of `path`. A failure names the path it stopped
    /// at, as mkdir -p does ("/home/u/.local: Not a directory" where .local is a file).
    public static func createDirectories(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        var made = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            made += "/" + component
            var info = stat()
            if stat(made, &info) != 0 {
                if mkdir(made, mode) == 0 { continue }
                let code = errno
                // EEXIST: made by someone else meanwhile.
                guard code == EEXIST, stat(made, &info) == 0 else { throw SystemError(made, code: code) }
            }
            guard info.st_mode & S_IFMT == S_IFDIR else { throw SystemError(made, code: ENOTDIR) }
        }
    }
}
