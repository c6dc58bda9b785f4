import Cgroups
import Glibc

/// What `vpnctl members` shows of a process, read from /proc (and the user database).
enum ProcessDetails {
    /// The command line, its arguments joined by spaces; a process without one (a zombie,
    /// a kernel thread) shows its name in brackets, as ps does.
    static func commandLine(of pid: Int32) -> String {
        let arguments = (CgroupHierarchy.readFile("/proc/\(pid)/cmdline") ?? "").split(separator: "\0").map(String.init)
        if !arguments.isEmpty { return arguments.joined(separator: " ") }
        return "[" + (CgroupHierarchy.readFile("/proc/\(pid)/comm") ?? "?").trimmingTrailingNewline() + "]"
    }

    /// When the process started, in seconds since the epoch: its start in clock ticks after
    /// boot (field 22 of /proc/PID/stat) plus the boot time (btime of /proc/stat).
    static func startTime(of pid: Int32) -> Double? {
        guard let stat = CgroupHierarchy.readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")"),
              let ticks = startTicks(afterCommand: stat[stat.index(after: close)...]),
              let boot = CgroupHierarchy.readFile("/proc/stat")?.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
              let bootTime = Double(boot.dropFirst("btime ".count)) else { return nil }
        return bootTime + Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Field 22 counted from the text after the command's closing parenthesis (the command
    /// itself may hold spaces and parentheses), which starts with field 3.
    static func startTicks(afterCommand rest: Substring) -> UInt64? {
        let fields = rest.split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// The audit session id (/proc/PID/sessionid): logind names the session after it.
    /// Nil for a process in no session (the kernel's "unset", 4294967295).
    static func sessionID(of pid: Int32) -> UInt32? {
        guard let text = CgroupHierarchy.readFile("/proc/\(pid)/sessionid"), let id = UInt32(text.trimmingTrailingNewline()),
              id != UInt32.max else { return nil }
        return id
    }
}

/// Names from the user database.
enum UserNames {
    /// The user's name, or nil if the database has none for the uid.
    static func name(of uid: UInt32) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return String(cString: entry.pw_name)
    }
}
