import Glibc
import Netlink

/// Which process relays a network namespace of TUN/TAP devices alone (ContainerFinder's
/// relayed ones): a slirp4netns or pasta whose command line (RelayCommand) names one of its
/// devices and the namespace, by a process in it or by its file, compared by the id vpnd's
/// namespace gives it (vpnd gave it one when it found it); pasta running a command serves
/// its child's namespace. Rootless podman's namespace file is a bind mount in podman's own
/// mount namespace, an empty file here: such a relay is taken for a namespace only when it is the one relay whose namespace vpnd cannot see that
/// can be that namespace's (its device, its user) and that namespace the only one it can be
/// for. A relay started otherwise (its target not on its command line, a descriptor handed
/// to another process) is not found.
public enum RelayFinder {
    public struct Relay: Hashable, Sendable {
        public var pid: Int32
        public var command: RelayCommand
        /// The id vpnd's namespace gives the namespace it serves; nil: none (no member's,
        /// which vpnd numbers when it finds them) or not one vpnd can see (`unseen`).
        public var namespace: Int32?
        /// Its target is no namespace here: a file vpnd cannot open, or that is no network
        /// namespace's (a bind mount in another mount namespace leaves an empty file).
        public var unseen = false
        /// Its real uid.
        public var uid: UInt32?
    }

    /// A relayed namespace to find the relay of: its id, its devices and the uid of a
    /// process in it, where vpnd knows one.
    public struct Relayed: Hashable, Sendable {
        public var namespace: Int32
        public var interfaces: [String]
        public var uid: UInt32?

        public init(namespace: Int32, interfaces: [String], uid: UInt32?) {
            self.namespace = namespace
            self.interfaces = interfaces
            self.uid = uid
        }
    }

    /// How a relay was found: its command line names the namespace, or it is the only relay
    /// that can be that namespace's (RelayProcessReport.named, .alone).
    public enum Match: String, Hashable, Sendable {
        case named, alone
    }

    /// Every relay process. `open(path)`: the namespace file's descriptor (a rootless user's
    /// /run/user/UID is its own, mode 0700: the caller opens it with the override it may
    /// use), closed here.
    public static func relays(netlink: Rtnetlink, open: (String) -> Int32? = { path in let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC); return fd < 0 ? nil : fd }) -> [Relay] {
        guard let proc = opendir("/proc") else { return [] }
        defer { closedir(proc) }
        var found: [Relay] = []
        while let entry = readdir(proc) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name), pid > 0, RelayCommand.programs.contains(read("/proc/\(pid)/comm").trimmingNewline),
                  let command = RelayCommand.parse(read("/proc/\(pid)/cmdline").split(separator: "\0", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty })
            else { continue }
            var relay = Relay(pid: pid, command: command, uid: uid(of: pid))
            switch command.target {
            case let .process(target):
                relay.namespace = (try? netlink.assignedNamespaceID(ofProcess: target)) ?? nil
            case .child:
                // Its one child, the command it runs in the namespace; none yet or any more:
                // it serves no namespace vpnd can name.
                if let child = read("/proc/\(pid)/task/\(pid)/children").split(whereSeparator: \.isWhitespace).first.flatMap({ Int32($0) }) {
                    relay.namespace = (try? netlink.assignedNamespaceID(ofProcess: child)) ?? nil
                }
            case let .path(path):
                guard let fd = open(path) else {
                    relay.unseen = true
                    break
                }
                do {
                    relay.namespace = try netlink.assignedNamespaceID(ofFile: fd)
                } catch {
                    relay.unseen = true
                }
                close(fd)
            }
            found.append(relay)
        }
        return found
    }

    /// The relay of each namespace, by its id, and how it was found. Pure.
    public static func pair(_ namespaces: [Relayed], relays: [Relay]) -> [Int32: (relay: Relay, match: Match)] {
        func serves(_ relay: Relay, _ relayed: Relayed) -> Bool { relay.command.interface.map(relayed.interfaces.contains) ?? true }
        var paired: [Int32: (relay: Relay, match: Match)] = [:]
        for relayed in namespaces {
            if let relay = relays.filter({ $0.namespace == relayed.namespace && serves($0, relayed) }).min(by: { $0.pid < $1.pid }) {
                paired[relayed.namespace] = (relay, .named)
            }
        }
        let unseen = relays.filter(\.unseen)
        func could(_ relay: Relay, _ relayed: Relayed) -> Bool {
            serves(relay, relayed) && (relayed.uid == nil || relay.uid == nil || relayed.uid == relay.uid)
        }
        let open = namespaces.filter { paired[$0.namespace] == nil }
        for relayed in open {
            let candidates = unseen.filter { could($0, relayed) }
            guard candidates.count == 1, let relay = candidates.first, open.filter({ could(relay, $0) }).count == 1 else { continue }
            paired[relayed.namespace] = (relay, .alone)
        }
        return paired
    }

    private static func uid(of pid: Int32) -> UInt32? {
        for line in read("/proc/\(pid)/status").split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap { UInt32($0) }
        }
        return nil
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
