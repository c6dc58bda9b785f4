import Glibc

/// A single-instance program's processes that run for a user outside a profile, read from
/// /proc with plain calls (vpnexec starts with every launch; this runs for the programs of
/// SingleInstanceProgram alone).
public enum RunningInstances {
    /// The lowest pid (the first started: as a rule the instance the others hand launches
    /// to) of `uid`'s processes of `program` outside the profile, but for `own`, and the
    /// name it runs under; nil if there is none.
    public static func outside(_ launch: LaunchReport, program: SingleInstanceProgram, uid: uid_t, own: pid_t,
                               proc: String = "/proc") -> (pid: Int32, name: String)? {
        guard let directory = opendir(proc) else { return nil }
        defer { closedir(directory) }
        let procFD = dirfd(directory)
        var found: (pid: Int32, name: String)?
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            guard let pid = Int32(name), pid != own, pid < found?.pid ?? .max else { continue }
            var status = stat()
            guard fstatat(procFD, name, &status, 0) == 0, status.st_uid == uid else { continue }
            let comm = read(name + "/comm", in: procFD).map { $0.hasSuffix("\n") ? String($0.dropLast()) : $0 }
            let executable = executableName(name + "/exe", in: procFD)
            guard let runsAs = [executable, comm].compactMap({ $0 }).first(where: program.runs(as:)) else { continue }
            // One that exited meanwhile, or one in the profile, is not it.
            guard let cgroup = read(name + "/cgroup", in: procFD).flatMap(unifiedCgroup), !launch.holds(cgroup: cgroup) else { continue }
            found = (pid, runsAs)
        }
        return found
    }

    /// The cgroup v2 line of /proc/PID/cgroup ("0::/path").
    static func unifiedCgroup(_ text: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }

    /// The file name of the executable a /proc/PID/exe link names (one replaced since it
    /// started, as by a package upgrade under a running browser, is " (deleted)").
    static func executableName(_ path: String, in directory: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlinkat(directory, path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        var target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if target.hasSuffix(" (deleted)") { target.removeLast(" (deleted)".count) }
        return SingleInstanceProgram.fileName(target)
    }

    /// A small /proc file, whole.
    static func read(_ path: String, in directory: Int32) -> String? {
        let fd = openat(directory, path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            text += buffer[0..<count]
        }
        return String(decoding: text, as: UTF8.self)
    }
}
