import Descriptors
import Glibc

/// A file replaced whole: written beside it (`temporary`, made new), synced, then renamed
/// over it, so that a reader (the boot-time killswitch) finds the old file or the new one,
/// never a part.
enum DurableFile {
    static func replace(_ path: String, with bytes: [UInt8], writingFirst temporary: String) throws(SystemError) {
        let file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        try file.writeAll(bytes, "write \(temporary)")
        guard fsync(file.raw) == 0 else { throw SystemError("fsync \(temporary)") }
        file.close()
        guard rename(temporary, path) == 0 else { throw SystemError("rename \(temporary)") }
    }
}
