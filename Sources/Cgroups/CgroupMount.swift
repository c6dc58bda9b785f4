/// Where the cgroup v2 hierarchy is mounted, read from /proc/self/mountinfo: at
/// /sys/fs/cgroup on a unified host, at /sys/fs/cgroup/unified on a hybrid one.
public enum CgroupMount {
    /// Mount points of cgroup2 file systems in a mountinfo text, the best first: mounts
    /// of the hierarchy's root ("/") before bind mounts of a subtree, and within each, later
    /// mounts (which shadow earlier ones on the same path) first.
    public static func candidates(inMountInfo text: String) -> [String] {
        var whole: [String] = [], partial: [String] = []
        for line in text.split(separator: "\n") {
            // Fields: id parent major:minor root mountpoint options [optional...] - fstype source superoptions
            let fields = line.split(separator: " ")
            guard let separator = fields.firstIndex(of: "-"), separator + 1 < fields.count,
                  fields[separator + 1] == "cgroup2", fields.count > 4 else { continue }
            if fields[3] == "/" { whole.append(unescape(fields[4])) } else { partial.append(unescape(fields[4])) }
        }
        return whole.reversed() + partial.reversed()
    }

    /// The best candidate, without looking at the file system.
    public static func find(inMountInfo text: String) -> String? {
        candidates(inMountInfo: text).first
    }

    /// mountinfo escapes space, tab, newline and backslash as octal (\040).
    static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3,
               let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
