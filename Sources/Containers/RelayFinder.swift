import Glibc
import Netlink

/// Which process relays a network namespace of TUN/TAP devices alone (ContainerFinder's
/// relayed ones): a slirp4netns or pasta whose command line (RelayCommand) names that
/// namespace, by a process in it or by its file, and one of its devices. The namespace is
/// compared by the id vpnd's namespace gives it, so a relay is found only for a namespace
/// that has one (vpnd gave it one when it found it). A relay started otherwise (its target
/// not on its command line, a descriptor handed to another process) is not found.
public enum RelayFinder {
    public struct Relay: Hashable, Sendable {
        public var pid: Int32
        public var command: RelayCommand
        /// The id vpnd's namespace gives the namespace it serves.
        public var namespace: Int32
    }

    /// Every relay process whose namespace has an id here. `open(path)`: the namespace
    /// file's descriptor (a rootless user's /run/user/UID is its own, mode 0700: the caller
    /// opens it with the override it may use), closed here.
    public static func relays(netlink: Rtnetlink, open: (String) -> Int32? = { path in let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC); return fd < 0 ? nil : fd }) -> [Relay] {
        guard let proc = opendir("/proc") else { return [] }
        defer { closedir(proc) }
        var found: [Relay] = []
        while let entry = readdir(proc) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name), pid > 0, RelayCommand.programs.contains(read("/proc/\(pid)/comm").trimmingNewline),
                  let command = RelayCommand.parse(read("/proc/\(pid)/cmdline").split(separator: "\0", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty })
            else { continue }
            let id: Int32?
            switch command.target {
            case let .process(target):
                id = (try? netlink.assignedNamespaceID(ofProcess: target)) ?? nil
            case let .path(path):
                guard let fd = open(path) else { continue }
                id = (try? netlink.assignedNamespaceID(ofFile: fd)) ?? nil
                close(fd)
            }
            if let id { found.append(Relay(pid: pid, command: command, namespace: id)) }
        }
        return found
    }

    /// The relay of the namespace numbered `namespace` with these devices: the one naming
    /// it and one of its devices (or no device: pasta's default), the lowest pid first. Pure.
    public static func relay(of namespace: Int32, interfaces: [String], among relays: [Relay]) -> Relay? {
        relays.filter { $0.namespace == namespace && ($0.command.interface.map(interfaces.contains) ?? true) }.min { $0.pid < $1.pid }
    }

    private static func read(_ path: String) -> String {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 16 {
            let n = Glibc.read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

private extension String {
    var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
