import Foundation
import Names
import SocketPrograms

/// `vpnctl check` on this host's lookup paths (NameFollowingCheck): whether this kernel can
/// follow members' lookups through systemd-resolved and nscd (the kfunc the unix-connect
/// program needs is in its BTF), nsswitch.conf's hosts line, nscd's socket.
enum NamesCheck {
    static func run(btf: String = "/sys/kernel/btf/vmlinux", nsswitch: String = "/etc/nsswitch.conf", nscd: String = "/run/nscd/socket") -> [String] {
        let followed = FileManager.default.contents(atPath: btf).map { (try? NameFollowingTypes(btf: Array($0))) != nil } ?? false
        return NameFollowingCheck.warnings(followed: followed, nsswitch: try? String(contentsOfFile: nsswitch, encoding: .utf8),
                                           nscdRunning: FileManager.default.fileExists(atPath: nscd))
    }
}
