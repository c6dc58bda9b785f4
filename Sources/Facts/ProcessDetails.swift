import Cgroups
import Glibc
import Policy

/// What `vpnctl members` shows of a process, read from /proc (and the user database).
public enum ProcessDetails {
    /// The command line, its arguments joined by spaces; a process without one (a zombie,
    /// a kernel thread) shows its name in brackets, as ps does.
    public static func commandLine(of pid: Int32) -> String {
        let arguments = (CgroupHierarchy.readFile("/proc/\(pid)/cmdline") ?? "").split(separator: "\0").map(String.init)
        if !arguments.isEmpty { return arguments.joined(separator: " ") }
        return "[" + (CgroupHierarchy.readFile("/proc/\(pid)/comm") ?? "?").trimmingTrailingNewline() + "]"
    }

    /// When the process started, in seconds since the epoch: its start in clock ticks after
    /// boot (field 22 of /proc/PID/stat) plus the boot time (btime of /proc/stat).
    public static func startTime(of pid: Int32) -> Double? {
        guard let stat = CgroupHierarchy.readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")"),
              let ticks = startTicks(afterCommand: stat[stat.index(after: close)...]),
              let boot = CgroupHierarchy.readFile("/proc/stat")?.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
              let bootTime = Double(boot.dropFirst("btime ".count)) else { return nil }
        return bootTime + Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Field 22 counted from the text after the command's closing parenthesis (the command
    /// itself may hold spaces and parentheses), which starts with field 3.
    public static func startTicks(afterCommand rest: Substring) -> UInt64? {
        let fields = rest.split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// When the process started, in clock ticks after boot: with its pid, it names one
    /// process for as long as the machine runs (an exec keeps it).
    public static func startTicks(of pid: Int32) -> UInt64? {
        guard let stat = CgroupHierarchy.readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        return startTicks(afterCommand: stat[stat.index(after: close)...])
    }

    /// Who the process is for a bypass (Policy.bypassRefusal): its real uid, and its real
    /// gid with its supplementary groups, from /proc/PID/status. Real, not effective: in a
    /// fanotify permission event a set-user-ID exec has not yet taken its new credentials,
    /// after it (exec events) the effective ones are the program's owner's, and the real
    /// uid is the caller's both times. Meaningful only while the process is known to be
    /// alive afterwards (a ProcessHandle).
    public static func credentials(of pid: Int32) -> Credentials? {
        CgroupHierarchy.readFile("/proc/\(pid)/status").flatMap(credentials(status:))
    }

    /// The same from the text of /proc/PID/status ("Uid:\tREAL\tEFFECTIVE\tSAVED\tFS",
    /// "Gid:" alike, "Groups:\tG G ..."). Pure, for tests.
    public static func credentials(status: String) -> Credentials? {
        var uid: UInt32?, gid: UInt32?, groups: [UInt32] = []
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: \.isWhitespace)
            switch fields.first {
            case "Uid:": uid = fields.dropFirst().first.flatMap { UInt32($0) }
            case "Gid:": gid = fields.dropFirst().first.flatMap { UInt32($0) }
            case "Groups:": groups = fields.dropFirst().compactMap { UInt32($0) }
            default: break
            }
        }
        guard let uid, let gid else { return nil }
        return Credentials(uid: uid, groups: Array(Set(groups + [gid])).sorted())
    }

    /// The audit session id (/proc/PID/sessionid): logind names the session after it.
    /// Nil for a process in no session (the kernel's "unset", 4294967295).
    public static func sessionID(of pid: Int32) -> UInt32? {
        guard let text = CgroupHierarchy.readFile("/proc/\(pid)/sessionid"), let id = UInt32(text.trimmingTrailingNewline()),
              id != UInt32.max else { return nil }
        return id
    }
}
