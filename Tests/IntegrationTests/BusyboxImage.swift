import Foundation
import NetTestSupport

/// A container image made here, never pulled (no registry is reachable): Debian's static
/// busybox and the applets the container tests use, as a root and its tar file for
/// `podman import` and `docker import`.
enum BusyboxImage {
    static func write(root: String, tar: String) throws {
        try FileManager.default.createDirectory(atPath: root + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "/bin/busybox", toPath: root + "/bin/busybox")
        for applet in ["sh", "nc", "nslookup", "timeout", "sleep", "seq"] {
            try FileManager.default.createSymbolicLink(atPath: root + "/bin/" + applet, withDestinationPath: "busybox")
        }
        try Command.run(["tar", "-C", root, "-cf", tar, "."])
        chmod(tar, 0o644)
    }
}
