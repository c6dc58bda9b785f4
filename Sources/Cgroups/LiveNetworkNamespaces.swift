import CLinux
import Descriptors
import Glibc

/// The network namespaces that exist now, by cookie (SO_NETNS_COOKIE, what the socket
/// programs' storage names as its owner): each one a process is in, one a bind mount keeps
/// (`ip netns add`, a container runtime's /run/netns), or one a process holds a descriptor
/// of. A namespace none of these names can get no new socket, so the programs of a vpnd
/// whose owner it was act on nothing there any more (AdoptedSocketPrograms.detachOrphans).
/// Entering each namespace to read its cookie needs CAP_SYS_ADMIN, and reading other
/// processes' descriptors root: vpnd does this at start, before it drops them.
public enum LiveNetworkNamespaces {
    /// Nil when one of them could not be read: then none may be judged gone.
    public static func cookies() -> Set<UInt64>? {
        var candidates = DescriptorTable()
        var numbers: [Int32] = []
        var seen: Set<UInt64> = []
        func consider(_ path: String) {
            guard let namespace = try? FileDescriptor.open(path, O_RDONLY) else { return }
            var info = stat()
            guard fstat(namespace.raw, &info) == 0, seen.insert(UInt64(info.st_ino)).inserted else { return }
            numbers.append(candidates.insert(namespace).raw)
        }
        for pid in numericEntries(of: "/proc") {
            consider("/proc/\(pid)/ns/net")
            for fd in numericEntries(of: "/proc/\(pid)/fd") where link("/proc/\(pid)/fd/\(fd)").hasPrefix("net:[") {
                consider("/proc/\(pid)/fd/\(fd)")
            }
        }
        for mountPoint in networkNamespaceMounts() { consider(mountPoint) }
        var cookies = [UInt64](repeating: 0, count: numbers.count)
        guard !numbers.isEmpty, vx_netns_cookies(numbers, Int32(numbers.count), &cookies) == 0, !cookies.contains(0) else { return nil }
        return Set(cookies)
    }

    /// The mount points of nsfs mounts of network namespaces (their root is `net:[INODE]`),
    /// from /proc/self/mountinfo.
    static func networkNamespaceMounts() -> [String] {
        guard let text = try? readText("/proc/self/mountinfo") else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count, fields[dash + 1] == "nsfs",
                  fields.count > 4, fields[3].hasPrefix("net:[") else { return nil }
            return unescape(String(fields[4]))
        }
    }

    /// mountinfo writes a space, a tab, a newline and a backslash in a path as octal escapes.
    static func unescape(_ path: String) -> String {
        var result = ""
        var rest = Substring(path)
        while let slash = rest.firstIndex(of: "\\") {
            result += rest[..<slash]
            let code = rest[rest.index(after: slash)...].prefix(3)
            if code.count == 3, let value = UInt8(code, radix: 8) {
                result.append(Character(UnicodeScalar(value)))
                rest = rest[rest.index(slash, offsetBy: 4)...]
            } else {
                result.append("\\")
                rest = rest[rest.index(after: slash)...]
            }
        }
        return result + rest
    }

    private static func numericEntries(of directory: String) -> [String] {
        Directory.names(of: directory).filter { name in name.utf8.first.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false }
    }

    private static func link(_ path: String) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return "" }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func readText(_ path: String) throws -> String {
        let file = try FileDescriptor.open(path, O_RDONLY)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(file.raw, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer.prefix(count)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
